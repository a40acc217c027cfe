// RUN: nnx-opt %s --split-input-file -p chip-allocate | FileCheck %s

// chip-lower's output: four buffers in allocation order (the input, the constant,
// an intermediate and the output), tiles pointing into them (@tK:OFFSET) and
// dependencies on whole buffers (S:@tK). chip-allocate puts the constant first
// (@t1 at 0x0, 256 bytes), then the others in declaration order, each on a 64-byte
// boundary: @t0 at 0x100, @t2 at 0x180, @t3 at 0x200; storage_bytes = 0x280 = 640.
// Tiles become absolute (offset 0x40 into @t3 -> 0x240), `nnx.access` names address
// ranges, the chip.buffer ops are gone, cache tiles stay.
// CHECK:      chip.program {storage_bytes = 640 : i64, target = "nnx-default"}
// CHECK-NOT:    chip.buffer
// CHECK-NEXT:   chip.input @x #chip.tile<S:0x100, 4x8xf32>
// CHECK-NEXT:   chip.const @w #chip.tile<S:0x0, 8x8xf32>
// CHECK-NEXT:   chip.output @y #chip.tile<S:0x200, 4x8xf32>
// CHECK-NEXT:   chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<S:0x100, 4x8xf32> {nnx.access = "S:256:384 | N:0:128", nnx.seq = 0 : i64}
// CHECK-NEXT:   chip.load DAU0 #chip.tile<W:0x0, 8x8xf32> <- #chip.tile<S:0x0, 8x8xf32> {nnx.access = "S:0:256 | W:0:256", nnx.seq = 1 : i64}
// CHECK-NEXT:   chip.mpu MatMul MPU0 #chip.tile<O:0x0, 4x8xf32> <- #chip.tile<N:0x0, 4x8xf32>, #chip.tile<W:0x0, 8x8xf32> {nnx.access = "N:0:128 W:0:256 | O:0:128", nnx.seq = 2 : i64}
// CHECK-NEXT:   chip.store DAU0 #chip.tile<S:0x180, 4x8xf32> <- #chip.tile<O:0x0, 4x8xf32> {nnx.access = "O:0:128 | S:384:512", nnx.seq = 3 : i64}
// CHECK-NEXT:   chip.store DAU0 #chip.tile<S:0x240, 2x8xf32> <- #chip.tile<O:0x40, 2x8xf32> {nnx.access = "O:64:128 | S:512:640", nnx.seq = 4 : i64}
chip.program {storage_bytes = 0 : i64, target = "nnx-default"} {
  chip.buffer @t0 {bytes = 128 : i64, kind = "input"}
  chip.buffer @t1 {bytes = 256 : i64, kind = "const"}
  chip.buffer @t2 {bytes = 128 : i64, kind = "intermediate"}
  chip.buffer @t3 {bytes = 128 : i64, kind = "output"}
  chip.input @x #chip.tile<@t0:0x0, 4x8xf32>
  chip.const @w #chip.tile<@t1:0x0, 8x8xf32> = dense<5.000000e-01> : tensor<8x8xf32>
  chip.output @y #chip.tile<@t3:0x0, 4x8xf32>
  chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<@t0:0x0, 4x8xf32> {nnx.access = "S:@t0 | N:0:128", nnx.seq = 0 : i64}
  chip.load DAU0 #chip.tile<W:0x0, 8x8xf32> <- #chip.tile<@t1:0x0, 8x8xf32> {nnx.access = "S:@t1 | W:0:256", nnx.seq = 1 : i64}
  chip.mpu MatMul MPU0 #chip.tile<O:0x0, 4x8xf32> <- #chip.tile<N:0x0, 4x8xf32>, #chip.tile<W:0x0, 8x8xf32> {nnx.access = "N:0:128 W:0:256 | O:0:128", nnx.seq = 2 : i64}
  chip.store DAU0 #chip.tile<@t2:0x0, 4x8xf32> <- #chip.tile<O:0x0, 4x8xf32> {nnx.access = "O:0:128 | S:@t2", nnx.seq = 3 : i64}
  chip.store DAU0 #chip.tile<@t3:0x40, 2x8xf32> <- #chip.tile<O:0x40, 2x8xf32> {nnx.access = "O:64:128 | S:@t3", nnx.seq = 4 : i64}
}

// -----

// Constants that end off the 64-byte grid: the next buffer starts at the next
// multiple of 64 (36 bytes -> 0x40); constants declared after other buffers still
// come first (@c2 at 0x40). Every buffer takes at least one 64-byte step.
// CHECK:      chip.program {storage_bytes = 192 : i64}
// CHECK-NEXT:   chip.const @c #chip.tile<S:0x0, 9xf32>
// CHECK-NEXT:   chip.input @x #chip.tile<S:0x80, 9xf32>
// CHECK-NEXT:   chip.const @c2 #chip.tile<S:0x40, 1xf32>
chip.program {storage_bytes = 0 : i64} {
  chip.buffer @t0 {bytes = 36 : i64, kind = "const"}
  chip.buffer @t1 {bytes = 36 : i64, kind = "input"}
  chip.buffer @t2 {bytes = 4 : i64, kind = "const"}
  chip.const @c #chip.tile<@t0:0x0, 9xf32> = dense<1.0> : tensor<9xf32>
  chip.input @x #chip.tile<@t1:0x0, 9xf32>
  chip.const @c2 #chip.tile<@t2:0x0, 1xf32> = dense<2.0> : tensor<1xf32>
}

// -----

// A strided view of a buffer (a Transpose read in place) keeps its strides.
// CHECK:      chip.program {storage_bytes = 64 : i64}
// CHECK-NEXT:   chip.load DAU0 #chip.tile<N:0x0, 4x2xf32> <- #chip.tile<S:0x4, 4x2xf32, [1, 4]>
chip.program {storage_bytes = 0 : i64} {
  chip.buffer @t0 {bytes = 64 : i64, kind = "input"}
  chip.load DAU0 #chip.tile<N:0x0, 4x2xf32> <- #chip.tile<@t0:0x4, 4x2xf32, [1, 4]>
}

// -----

// A program that is already allocated (no chip.buffer) is left as it is.
// CHECK:      chip.program {storage_bytes = 4096 : i64}
// CHECK-NEXT:   chip.input @x #chip.tile<S:0x800, 9xf32>
chip.program {storage_bytes = 4096 : i64} {
  chip.input @x #chip.tile<S:0x800, 9xf32>
}
