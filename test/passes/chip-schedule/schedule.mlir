// RUN: nnx-opt %s --split-input-file -p chip-schedule | FileCheck %s
// RUN: nnx-opt %s --split-input-file -p chip-schedule,chip-sync | FileCheck %s --check-prefix=SYNC

// In the given order VPU0 runs the relu of the 64x64 matmul before the independent
// exp of @z, and DAU0 loads @z last: the exp waits for the whole matmul. The list
// scheduler (cost model: the default target) loads @z before the matmul can start
// and lets VPU0 run the exp while the MPU works.
// CHECK:      chip.load DAU0 #chip.tile<N:0x0, 64x64xf32>
// CHECK-NEXT: chip.load DAU0 #chip.tile<W:0x0, 64x64xf32>
// CHECK-NEXT: chip.load DAU0 #chip.tile<N:0x8000, 4x8xf32>
// CHECK-NEXT: chip.mpu MatMul MPU0
// CHECK-NEXT: chip.vpu Exp VPU0
// CHECK-NEXT: chip.vpu Relu VPU0
// CHECK-NEXT: }
// chip-sync after it places the tokens for the new order: the exp waits only for
// its own load, the relu for the matmul.
// SYNC:      chip.load DAU0 #chip.tile<N:0x8000, 4x8xf32>
// SYNC-NEXT: chip.signal DAU0 [[LZ:t[0-9]+]]
// SYNC:      chip.wait VPU0 [[LZ]]
// SYNC-NEXT: chip.vpu Exp VPU0
// SYNC-NEXT: chip.wait VPU0 [[MM:t[0-9]+]]
// SYNC-NEXT: chip.vpu Relu VPU0
chip.program {storage_bytes = 65536 : i64} {
  chip.input @x #chip.tile<S:0x0, 64x64xf32>
  chip.input @z #chip.tile<S:0x4000, 4x8xf32>
  chip.const @w #chip.tile<S:0x8000, 64x64xf32> = dense<1.0> : tensor<64x64xf32>
  chip.load DAU0 #chip.tile<N:0x0, 64x64xf32> <- #chip.tile<S:0x0, 64x64xf32>
  chip.load DAU0 #chip.tile<W:0x0, 64x64xf32> <- #chip.tile<S:0x8000, 64x64xf32>
  chip.mpu MatMul MPU0 #chip.tile<O:0x0, 64x64xf32> <- #chip.tile<N:0x0, 64x64xf32>, #chip.tile<W:0x0, 64x64xf32>
  chip.vpu Relu VPU0 #chip.tile<O:0x0, 64x64xf32> <- #chip.tile<O:0x0, 64x64xf32>
  chip.load DAU0 #chip.tile<N:0x8000, 4x8xf32> <- #chip.tile<S:0x4000, 4x8xf32>
  chip.vpu Exp VPU0 #chip.tile<O:0x8000, 4x8xf32> <- #chip.tile<N:0x8000, 4x8xf32>
}

// -----

// A chain with no freedom keeps its order.
// CHECK:      chip.load DAU0
// CHECK-NEXT: chip.vpu Relu VPU0
// CHECK-NEXT: chip.store DAU0
chip.program {storage_bytes = 4096 : i64} {
  chip.input @x #chip.tile<S:0x0, 4x8xf32>
  chip.output @y #chip.tile<S:0x800, 4x8xf32>
  chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<S:0x0, 4x8xf32>
  chip.vpu Relu VPU0 #chip.tile<O:0x0, 4x8xf32> <- #chip.tile<N:0x0, 4x8xf32>
  chip.store DAU0 #chip.tile<S:0x800, 4x8xf32> <- #chip.tile<O:0x0, 4x8xf32>
}
