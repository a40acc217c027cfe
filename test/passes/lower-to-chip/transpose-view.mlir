// RUN: nnx-opt %s -p lower-to-chip | FileCheck %s
// RUN: nnx-opt %s -p 'lower-to-chip{schedule=false}' | FileCheck %s --check-prefix=PLAIN

// Heads split as exporters write it (Reshape, Transpose(0,2,1,3)) and fed to a batched
// MatMul: the Transpose is a view with permuted strides -- no VPU pass; its tiles are
// strided (here the DMA loads one from storage). A Transpose whose result is reshaped
// again (or returned) is still computed.
// CHECK-NOT: chip.vpu Transpose VPU0 {{.*}}1x2x4x3xf32
// CHECK:     chip.load DAU0 #chip.tile<N:[[A:0x[0-9a-f]+]], 1x2x4x3xf32> <- #chip.tile<S:{{0x[0-9a-f]+}}, 1x2x4x3xf32, [24, 3, 6, 1]>
// CHECK:     chip.mpu MatMul MPU0 {{.*}} <- #chip.tile<N:[[A]], 1x2x4x3xf32>
// CHECK:     chip.vpu Transpose VPU0 {{.*}} {params = {perm = array<i64: 0, 2, 1, 3>}}
// PLAIN:     chip.vpu Transpose
// PLAIN:     chip.mpu MatMul
func.func @main(%x: tensor<1x4x6xf32> {nnx.name = "x"}, %w: tensor<1x2x3x5xf32> {nnx.name = "w"}) -> (tensor<1x4x10xf32> {nnx.name = "y"}) {
  %s = graph.constant dense<[1, 4, 2, 3]> : tensor<4xi64>
  %r = graph.reshape(%x, %s) : (tensor<1x4x6xf32>, tensor<4xi64>) -> tensor<1x4x2x3xf32>
  %t = graph.transpose(%r) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x3xf32>) -> tensor<1x2x4x3xf32>
  %m = graph.matmul(%t, %w) : (tensor<1x2x4x3xf32>, tensor<1x2x3x5xf32>) -> tensor<1x2x4x5xf32>
  %b = graph.transpose(%m) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x5xf32>) -> tensor<1x4x2x5xf32>
  %s2 = graph.constant dense<[1, 4, 10]> : tensor<3xi64>
  %y = graph.reshape(%b, %s2) : (tensor<1x4x2x5xf32>, tensor<3xi64>) -> tensor<1x4x10xf32>
  func.return %y : tensor<1x4x10xf32>
}
