// RUN: nnx-opt %s --split-input-file -p chip-link | FileCheck %s
// RUN: nnx-opt %s --split-input-file -p chip-link,chip-allocate,chip-sync | FileCheck %s --check-prefix=ALLOC

// Two subgraphs compiled apart: the first reads @x and writes @v1 (its output), the
// second reads @v1 (its input: a symbolic reference to the first's output) and
// writes @y. Linked: one program whose buffers are renamed apart (@s0_t0, ...); the
// second program's input buffer @t0 is the first's output buffer @s0_t1, which
// became an intermediate (only the second reads it, so its chip.output is gone);
// the instructions follow each other, nnx.seq renumbered, nnx.access renamed.
// CHECK:      chip.program {storage_bytes = 0 : i64, target = "nnx-default"} {
// CHECK-NEXT:   chip.buffer @s0_t0 {bytes = 128 : i64, kind = "input"}
// CHECK-NEXT:   chip.buffer @s0_t1 {bytes = 128 : i64, kind = "intermediate"}
// CHECK-NEXT:   chip.buffer @s1_t1 {bytes = 128 : i64, kind = "output"}
// CHECK-NEXT:   chip.input @x #chip.tile<@s0_t0:0x0, 4x8xf32>
// CHECK-NEXT:   chip.output @y #chip.tile<@s1_t1:0x0, 4x8xf32>
// CHECK-NEXT:   chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<@s0_t0:0x0, 4x8xf32> {nnx.access = "S:@s0_t0 | N:0:128", nnx.seq = 0 : i64}
// CHECK-NEXT:   chip.vpu Relu VPU0 #chip.tile<O:0x0, 4x8xf32> <- #chip.tile<N:0x0, 4x8xf32> {nnx.access = "N:0:128 | O:0:128", nnx.seq = 1 : i64}
// CHECK-NEXT:   chip.store DAU0 #chip.tile<@s0_t1:0x0, 4x8xf32> <- #chip.tile<O:0x0, 4x8xf32> {nnx.access = "O:0:128 | S:@s0_t1", nnx.seq = 2 : i64}
// CHECK-NEXT:   chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<@s0_t1:0x0, 4x8xf32> {nnx.access = "S:@s0_t1 | N:0:128", nnx.seq = 3 : i64}
// CHECK-NEXT:   chip.vpu Relu VPU0 #chip.tile<O:0x0, 4x8xf32> <- #chip.tile<N:0x0, 4x8xf32> {nnx.access = "N:0:128 | O:0:128", nnx.seq = 4 : i64}
// CHECK-NEXT:   chip.store DAU0 #chip.tile<@s1_t1:0x0, 4x8xf32> <- #chip.tile<O:0x0, 4x8xf32> {nnx.access = "O:0:128 | S:@s1_t1", nnx.seq = 5 : i64}
// CHECK-NEXT: }
// After chip-allocate the link is one storage allocation (3 x 128 bytes), and
// chip-sync orders the second program's LOAD after the first's STORE of @v1
// (same unit DAU0: no token needed) and the reuse of N/O across the boundary.
// ALLOC:      chip.program {storage_bytes = 384 : i64, target = "nnx-default"}
// ALLOC:        chip.store DAU0 #chip.tile<S:0x80, 4x8xf32>
// ALLOC:        chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<S:0x80, 4x8xf32>
// ALLOC:        chip.store DAU0 #chip.tile<S:0x100, 4x8xf32>
chip.program {storage_bytes = 0 : i64, target = "nnx-default"} {
  chip.buffer @t0 {bytes = 128 : i64, kind = "input"}
  chip.buffer @t1 {bytes = 128 : i64, kind = "output"}
  chip.input @x #chip.tile<@t0:0x0, 4x8xf32>
  chip.output @v1 #chip.tile<@t1:0x0, 4x8xf32>
  chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<@t0:0x0, 4x8xf32> {nnx.access = "S:@t0 | N:0:128", nnx.seq = 0 : i64}
  chip.vpu Relu VPU0 #chip.tile<O:0x0, 4x8xf32> <- #chip.tile<N:0x0, 4x8xf32> {nnx.access = "N:0:128 | O:0:128", nnx.seq = 1 : i64}
  chip.store DAU0 #chip.tile<@t1:0x0, 4x8xf32> <- #chip.tile<O:0x0, 4x8xf32> {nnx.access = "O:0:128 | S:@t1", nnx.seq = 2 : i64}
}
chip.program {storage_bytes = 0 : i64, target = "nnx-default"} {
  chip.buffer @t0 {bytes = 128 : i64, kind = "input"}
  chip.buffer @t1 {bytes = 128 : i64, kind = "output"}
  chip.input @v1 #chip.tile<@t0:0x0, 4x8xf32>
  chip.output @y #chip.tile<@t1:0x0, 4x8xf32>
  chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<@t0:0x0, 4x8xf32> {nnx.access = "S:@t0 | N:0:128", nnx.seq = 0 : i64}
  chip.vpu Relu VPU0 #chip.tile<O:0x0, 4x8xf32> <- #chip.tile<N:0x0, 4x8xf32> {nnx.access = "N:0:128 | O:0:128", nnx.seq = 1 : i64}
  chip.store DAU0 #chip.tile<@t1:0x0, 4x8xf32> <- #chip.tile<O:0x0, 4x8xf32> {nnx.access = "O:0:128 | S:@t1", nnx.seq = 2 : i64}
}

// -----

// Two branches reading the same graph input @x (one shared buffer, one chip.input),
// and a join reading both branches' outputs. The constants of the two branches have
// the same name @w: the second is renamed apart (@s1_w). @a and @b are read only by
// the join: intermediates, no chip.output left.
// CHECK:      chip.program
// CHECK-NEXT:   chip.buffer @s0_t0 {bytes = 16 : i64, kind = "input"}
// CHECK-NEXT:   chip.buffer @s0_t1 {bytes = 16 : i64, kind = "const"}
// CHECK-NEXT:   chip.buffer @s0_t2 {bytes = 16 : i64, kind = "intermediate"}
// CHECK-NEXT:   chip.buffer @s1_t1 {bytes = 16 : i64, kind = "const"}
// CHECK-NEXT:   chip.buffer @s1_t2 {bytes = 16 : i64, kind = "intermediate"}
// CHECK-NEXT:   chip.buffer @s2_t2 {bytes = 16 : i64, kind = "output"}
// CHECK-NEXT:   chip.input @x #chip.tile<@s0_t0:0x0, 4xf32>
// CHECK-NEXT:   chip.const @w #chip.tile<@s0_t1:0x0, 4xf32>
// CHECK-NEXT:   chip.const @s1_w #chip.tile<@s1_t1:0x0, 4xf32>
// CHECK-NEXT:   chip.output @y #chip.tile<@s2_t2:0x0, 4xf32>
// CHECK:        chip.load DAU0 #chip.tile<N:0x0, 4xf32> <- #chip.tile<@s0_t0:0x0, 4xf32>
// CHECK:        chip.load DAU0 #chip.tile<N:0x0, 4xf32> <- #chip.tile<@s0_t0:0x0, 4xf32>
// CHECK:        chip.load DAU0 #chip.tile<N:0x0, 4xf32> <- #chip.tile<@s0_t2:0x0, 4xf32>
// CHECK-NEXT:   chip.load DAU0 #chip.tile<N:0x40, 4xf32> <- #chip.tile<@s1_t2:0x0, 4xf32>
chip.program {storage_bytes = 0 : i64} {
  chip.buffer @t0 {bytes = 16 : i64, kind = "input"}
  chip.buffer @t1 {bytes = 16 : i64, kind = "const"}
  chip.buffer @t2 {bytes = 16 : i64, kind = "output"}
  chip.input @x #chip.tile<@t0:0x0, 4xf32>
  chip.const @w #chip.tile<@t1:0x0, 4xf32> = dense<1.0> : tensor<4xf32>
  chip.output @a #chip.tile<@t2:0x0, 4xf32>
  chip.load DAU0 #chip.tile<N:0x0, 4xf32> <- #chip.tile<@t0:0x0, 4xf32> {nnx.access = "S:@t0 | N:0:16", nnx.seq = 0 : i64}
  chip.load DAU0 #chip.tile<N:0x40, 4xf32> <- #chip.tile<@t1:0x0, 4xf32> {nnx.access = "S:@t1 | N:64:80", nnx.seq = 1 : i64}
  chip.vpu Add VPU0 #chip.tile<O:0x0, 4xf32> <- #chip.tile<N:0x0, 4xf32>, #chip.tile<N:0x40, 4xf32> {nnx.access = "N:0:16 N:64:80 | O:0:16", nnx.seq = 2 : i64}
  chip.store DAU0 #chip.tile<@t2:0x0, 4xf32> <- #chip.tile<O:0x0, 4xf32> {nnx.access = "O:0:16 | S:@t2", nnx.seq = 3 : i64}
}
chip.program {storage_bytes = 0 : i64} {
  chip.buffer @t0 {bytes = 16 : i64, kind = "input"}
  chip.buffer @t1 {bytes = 16 : i64, kind = "const"}
  chip.buffer @t2 {bytes = 16 : i64, kind = "output"}
  chip.input @x #chip.tile<@t0:0x0, 4xf32>
  chip.const @w #chip.tile<@t1:0x0, 4xf32> = dense<2.0> : tensor<4xf32>
  chip.output @b #chip.tile<@t2:0x0, 4xf32>
  chip.load DAU0 #chip.tile<N:0x0, 4xf32> <- #chip.tile<@t0:0x0, 4xf32> {nnx.access = "S:@t0 | N:0:16", nnx.seq = 0 : i64}
  chip.load DAU0 #chip.tile<N:0x40, 4xf32> <- #chip.tile<@t1:0x0, 4xf32> {nnx.access = "S:@t1 | N:64:80", nnx.seq = 1 : i64}
  chip.vpu Mul VPU0 #chip.tile<O:0x0, 4xf32> <- #chip.tile<N:0x0, 4xf32>, #chip.tile<N:0x40, 4xf32> {nnx.access = "N:0:16 N:64:80 | O:0:16", nnx.seq = 2 : i64}
  chip.store DAU0 #chip.tile<@t2:0x0, 4xf32> <- #chip.tile<O:0x0, 4xf32> {nnx.access = "O:0:16 | S:@t2", nnx.seq = 3 : i64}
}
chip.program {storage_bytes = 0 : i64} {
  chip.buffer @t0 {bytes = 16 : i64, kind = "input"}
  chip.buffer @t1 {bytes = 16 : i64, kind = "input"}
  chip.buffer @t2 {bytes = 16 : i64, kind = "output"}
  chip.input @a #chip.tile<@t0:0x0, 4xf32>
  chip.input @b #chip.tile<@t1:0x0, 4xf32>
  chip.output @y #chip.tile<@t2:0x0, 4xf32>
  chip.load DAU0 #chip.tile<N:0x0, 4xf32> <- #chip.tile<@t0:0x0, 4xf32> {nnx.access = "S:@t0 | N:0:16", nnx.seq = 0 : i64}
  chip.load DAU0 #chip.tile<N:0x40, 4xf32> <- #chip.tile<@t1:0x0, 4xf32> {nnx.access = "S:@t1 | N:64:80", nnx.seq = 1 : i64}
  chip.vpu Add VPU0 #chip.tile<O:0x0, 4xf32> <- #chip.tile<N:0x0, 4xf32>, #chip.tile<N:0x40, 4xf32> {nnx.access = "N:0:16 N:64:80 | O:0:16", nnx.seq = 2 : i64}
  chip.store DAU0 #chip.tile<@t2:0x0, 4xf32> <- #chip.tile<O:0x0, 4xf32> {nnx.access = "O:0:16 | S:@t2", nnx.seq = 3 : i64}
}
