// RUN: nnx-opt %s -p chip-lower | FileCheck %s

// chip-lower lowers a Transpose marked `nnx.view` (by graph-transpose-views) as a
// strided view: no VPU Transpose, the MatMul's operand is LOADed with permuted strides.
// Without the mark (chip-lower run alone) the Transpose is a VPU op.
// CHECK-NOT: chip.vpu Transpose
// CHECK:     chip.load DAU0 #chip.tile<N:{{.*}}, 3x4xf32> <- #chip.tile<@t0:0x0, 3x4xf32, [1, 3]>
// CHECK:     chip.mpu MatMul
func.func @main(%x: tensor<4x3xf32> {nnx.name = "x"}, %w: tensor<4x2xf32> {nnx.name = "w"}) -> (tensor<3x2xf32> {nnx.name = "y"}) {
  %t = graph.transpose(%x) {perm = array<i64: 1, 0>, nnx.view} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %y = graph.matmul(%t, %w) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}
