// RUN: nnx-opt %s --split-input-file -p chip-sync | FileCheck %s

// Hand-written chip IR (no `nnx.access`: the accesses come from the tiles). The relu
// reads what DAU0 loaded: SIGNAL after the load, WAIT before the relu. The exp reads
// the relu's result on the same unit (its queue is in order): no token. The store
// reads the exp's result: t1. The last load overwrites N:0x0 that the relu read
// (write-after-read), but DAU0 already waited on t1, signalled after the exp, which
// VPU0 runs after the relu: DAU0 knows transitively, no third token.
// CHECK:      chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<S:0x0, 4x8xf32>
// CHECK-NEXT: chip.signal DAU0 t0
// CHECK-NEXT: chip.wait VPU0 t0
// CHECK-NEXT: chip.vpu Relu VPU0
// CHECK-NEXT: chip.vpu Exp VPU0
// CHECK-NEXT: chip.signal VPU0 t1
// CHECK-NEXT: chip.wait DAU0 t1
// CHECK-NEXT: chip.store DAU0
// CHECK-NEXT: chip.load DAU0
// CHECK-NEXT: }
chip.program {storage_bytes = 4096 : i64} {
  chip.input @x #chip.tile<S:0x0, 4x8xf32>
  chip.output @y #chip.tile<S:0x800, 4x8xf32>
  chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<S:0x0, 4x8xf32>
  chip.vpu Relu VPU0 #chip.tile<O:0x0, 4x8xf32> <- #chip.tile<N:0x0, 4x8xf32>
  chip.vpu Exp VPU0 #chip.tile<O:0x80, 4x8xf32> <- #chip.tile<O:0x0, 4x8xf32>
  chip.store DAU0 #chip.tile<S:0x800, 4x8xf32> <- #chip.tile<O:0x80, 4x8xf32>
  chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<S:0x0, 4x8xf32>
}

// -----

// With `nnx.access` and `nnx.seq` (what chip-lower writes), the dependencies are those
// of the sequential order even though a scheduler put the independent load of N:0x100
// (seq 2) first; both attributes are dropped. The two element boxes of one resident
// buffer (rows 0-2 and rows 2-4 of the 4x8 buffer at O:0x0) are independent although
// their byte spans interleave: the MPU writing rows 2-4 does not wait for the VPU
// reading rows 0-2.
// CHECK:      chip.load DAU0 #chip.tile<N:0x100, 4x8xf32> <- #chip.tile<S:0x0, 4x8xf32>
// CHECK-NOT:  nnx.
// CHECK-NEXT: chip.load DAU0 #chip.tile<N:0x0, 4x8xf32>
// CHECK-NEXT: chip.signal DAU0 t0
// CHECK-NEXT: chip.wait MPU0 t0
// CHECK-NEXT: chip.mpu MatMul MPU0 #chip.tile<O:0x0, 2x8xf32>
// CHECK-NEXT: chip.signal MPU0 t1
// CHECK-NEXT: chip.wait VPU0 t1
// CHECK-NEXT: chip.vpu Relu VPU0
// CHECK-NEXT: chip.mpu MatMul MPU0 #chip.tile<O:0x40, 2x8xf32>
// CHECK-NEXT: }
chip.program {storage_bytes = 4096 : i64} {
  chip.input @x #chip.tile<S:0x0, 4x8xf32>
  chip.load DAU0 #chip.tile<N:0x100, 4x8xf32> <- #chip.tile<S:0x0, 4x8xf32> {nnx.access = "S:0:128 | N:256:384", nnx.seq = 2 : i64}
  chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<S:0x0, 4x8xf32> {nnx.access = "S:0:128 | N:0:128", nnx.seq = 0 : i64}
  chip.mpu MatMul MPU0 #chip.tile<O:0x0, 2x8xf32> <- #chip.tile<N:0x0, 2x8xf32>, #chip.tile<N:0x0, 8x8xf32> {nnx.access = "N:0:256 | O:0:64:0:4x8:0-2,0-8", nnx.seq = 1 : i64}
  chip.vpu Relu VPU0 #chip.tile<O:0x80, 2x8xf32> <- #chip.tile<O:0x0, 2x8xf32> {nnx.access = "O:0:64:0:4x8:0-2,0-8 | O:128:192", nnx.seq = 3 : i64}
  chip.mpu MatMul MPU0 #chip.tile<O:0x40, 2x8xf32> <- #chip.tile<N:0x0, 2x8xf32>, #chip.tile<N:0x0, 8x8xf32> {nnx.access = "N:0:256 | O:64:128:0:4x8:2-4,0-8", nnx.seq = 4 : i64}
}
