// RUN: nnx-opt %s --split-input-file -p chip-allocate | FileCheck %s

// The data region (input @x, output @y at 0x100000000000 + ...) moves right behind
// the constants (256 bytes): @x to 0x100, @y to 0x280; every storage tile of the
// instructions and every storage allocation in `nnx.access` moves with it; cache
// tiles and the constant stay. storage_bytes = 256 + 512.
// CHECK:      chip.program {storage_bytes = 768 : i64, target = "nnx-default"}
// CHECK-NEXT:   chip.input @x #chip.tile<S:0x100, 4x8xf32>
// CHECK-NEXT:   chip.const @w #chip.tile<S:0x0, 8x8xf32>
// CHECK-NEXT:   chip.output @y #chip.tile<S:0x280, 4x8xf32>
// CHECK-NEXT:   chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<S:0x100, 4x8xf32> {nnx.access = "S:256:384 | N:0:128", nnx.seq = 0 : i64}
// CHECK-NEXT:   chip.load DAU0 #chip.tile<W:0x0, 8x8xf32> <- #chip.tile<S:0x0, 8x8xf32> {nnx.access = "S:0:256 | W:0:256", nnx.seq = 1 : i64}
// CHECK-NEXT:   chip.mpu MatMul MPU0 #chip.tile<O:0x0, 4x8xf32> <- #chip.tile<N:0x0, 4x8xf32>, #chip.tile<W:0x0, 8x8xf32> {nnx.access = "N:0:128 W:0:256 | O:0:128", nnx.seq = 2 : i64}
// CHECK-NEXT:   chip.store DAU0 #chip.tile<S:0x280, 4x8xf32> <- #chip.tile<O:0x0, 4x8xf32> {nnx.access = "O:0:128 | S:640:768", nnx.seq = 3 : i64}
chip.program {storage_bytes = 0 : i64, target = "nnx-default", nnx.unallocated = {const_bytes = 256 : i64, data_bytes = 512 : i64}} {
  chip.input @x #chip.tile<S:0x100000000000, 4x8xf32>
  chip.const @w #chip.tile<S:0x0, 8x8xf32> = dense<5.000000e-01> : tensor<8x8xf32>
  chip.output @y #chip.tile<S:0x100000000180, 4x8xf32>
  chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<S:0x100000000000, 4x8xf32> {nnx.access = "S:17592186044416:17592186044544 | N:0:128", nnx.seq = 0 : i64}
  chip.load DAU0 #chip.tile<W:0x0, 8x8xf32> <- #chip.tile<S:0x0, 8x8xf32> {nnx.access = "S:0:256 | W:0:256", nnx.seq = 1 : i64}
  chip.mpu MatMul MPU0 #chip.tile<O:0x0, 4x8xf32> <- #chip.tile<N:0x0, 4x8xf32>, #chip.tile<W:0x0, 8x8xf32> {nnx.access = "N:0:128 W:0:256 | O:0:128", nnx.seq = 2 : i64}
  chip.store DAU0 #chip.tile<S:0x100000000180, 4x8xf32> <- #chip.tile<O:0x0, 4x8xf32> {nnx.access = "O:0:128 | S:17592186044800:17592186044928", nnx.seq = 3 : i64}
}

// -----

// Constants that end off the 64-byte grid: the data region starts at the next
// multiple of 64 (const_bytes 36 -> 0x40).
// CHECK:      chip.program {storage_bytes = 128 : i64}
// CHECK-NEXT:   chip.const @c #chip.tile<S:0x0, 9xf32>
// CHECK-NEXT:   chip.input @x #chip.tile<S:0x40, 9xf32>
chip.program {storage_bytes = 0 : i64, nnx.unallocated = {const_bytes = 36 : i64, data_bytes = 64 : i64}} {
  chip.const @c #chip.tile<S:0x0, 9xf32> = dense<1.0> : tensor<9xf32>
  chip.input @x #chip.tile<S:0x100000000000, 9xf32>
}

// -----

// A program that is already allocated (no `nnx.unallocated`) is left as it is.
// CHECK:      chip.program {storage_bytes = 4096 : i64}
// CHECK-NEXT:   chip.input @x #chip.tile<S:0x800, 9xf32>
chip.program {storage_bytes = 4096 : i64} {
  chip.input @x #chip.tile<S:0x800, 9xf32>
}
