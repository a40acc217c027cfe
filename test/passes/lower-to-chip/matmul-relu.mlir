// RUN: nnx-opt %s -p lower-to-chip | FileCheck %s
// RUN: nnx-opt %s -p lower-to-chip | nnx-opt | FileCheck %s

// A matmul with a constant weight and a relu: storage symbols (weights first),
// DMA loads into the neuron (N) and weight (W) caches, the MPU computes into the
// output cache (O), the relu is applied there by the VPU before the store (epilogue:
// the matmul result never goes to storage), and SIGNAL/WAIT appear only where one
// unit hands data to another.
// CHECK:      chip.program {storage_bytes = 512 : i64, target = "nnx-default"}
// CHECK-NEXT:   chip.input @x #chip.tile<S:0x100, 4x8xf32>
// CHECK-NEXT:   chip.const @w #chip.tile<S:0x0, 8x8xf32> = dense<1.000000e+00> : tensor<8x8xf32>
// CHECK-NEXT:   chip.output @y #chip.tile<S:0x180, 4x8xf32>
// CHECK-NEXT:   chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<S:0x100, 4x8xf32>
// CHECK-NEXT:   chip.load DAU0 #chip.tile<W:0x0, 8x8xf32> <- #chip.tile<S:0x0, 8x8xf32>
// CHECK-NEXT:   chip.signal DAU0 [[T0:t[0-9]+]]
// CHECK-NEXT:   chip.wait MPU0 [[T0]]
// CHECK-NEXT:   chip.mpu MatMul MPU0 #chip.tile<O:0x0, 4x8xf32> <- #chip.tile<N:0x0, 4x8xf32>, #chip.tile<W:0x0, 8x8xf32>
// CHECK-NEXT:   chip.signal MPU0 [[T1:t[0-9]+]]
// CHECK-NEXT:   chip.wait VPU0 [[T1]]
// CHECK-NEXT:   chip.vpu Relu VPU0 #chip.tile<O:0x0, 4x8xf32> <- #chip.tile<O:0x0, 4x8xf32>
// CHECK-NEXT:   chip.signal VPU0 [[T2:t[0-9]+]]
// CHECK-NEXT:   chip.wait DAU0 [[T2]]
// CHECK-NEXT:   chip.store DAU0 #chip.tile<S:0x180, 4x8xf32> <- #chip.tile<O:0x0, 4x8xf32>
// CHECK-NEXT: }
// CHECK-NOT:  func.func
func.func @main(%x: tensor<4x8xf32> {nnx.name = "x"}) -> (tensor<4x8xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<1.0> : tensor<8x8xf32>
  %m = graph.matmul(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = graph.relu(%m) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
