// RUN: nnx-opt %s -p lower-to-chip | FileCheck %s
// RUN: nnx-opt %s -p lower-to-chip | nnx-opt | FileCheck %s

// A Linear layer as exported (MatMul of a [1, 4, 8] activation by a [8, 16] weight,
// then Add of a [16] bias), followed by a residual Add and a Relu: the MPU computes
// Gemm(A as [4, 8], W, bias) -- the bias initialises the accumulators, no VPU Add pass
// over the result -- and the residual Add and the Relu stay in the epilogue, reading
// the [1, 4, 16] residual through the [4, 16] view.
// CHECK:      chip.mpu Gemm MPU0 #chip.tile<O:[[O:0x[0-9a-f]+]], 4x16xf32> <- #chip.tile<N:{{.*}}, 4x8xf32>, #chip.tile<W:{{.*}}, 8x16xf32>, #chip.tile<W:{{.*}}, 16xf32>
// CHECK-NOT:  chip.vpu Add{{.*}}, #chip.tile<{{[NWO]}}:0x{{[0-9a-f]+}}, 16xf32>
// CHECK:      chip.vpu Add VPU0 #chip.tile<O:[[O]], 4x16xf32> <- #chip.tile<W:{{.*}}, 4x16xf32>, #chip.tile<O:[[O]], 4x16xf32>
// CHECK:      chip.vpu Relu VPU0 #chip.tile<O:[[O]], 4x16xf32> <- #chip.tile<O:[[O]], 4x16xf32>
// CHECK-NOT:  chip.vpu Add
func.func @main(%x: tensor<1x4x8xf32> {nnx.name = "x"}, %r: tensor<1x4x16xf32> {nnx.name = "r"}) -> (tensor<1x4x16xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<0.25> : tensor<8x16xf32>
  %b = graph.constant dense<1.0> : tensor<16xf32>
  %m = graph.matmul(%x, %w) : (tensor<1x4x8xf32>, tensor<8x16xf32>) -> tensor<1x4x16xf32>
  %a = graph.add(%m, %b) : (tensor<1x4x16xf32>, tensor<16xf32>) -> tensor<1x4x16xf32>
  %s = graph.add(%r, %a) : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %y = graph.relu(%s) : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  func.return %y : tensor<1x4x16xf32>
}
