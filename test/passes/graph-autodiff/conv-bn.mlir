// graph-autodiff on conv -> training-mode batch norm -> max pool -> global pool:
// the conv's input gradient is a ConvTranspose (not needed here: x is an argument),
// its weight gradient graph.conv_weight_grad with the conv's attributes, the pool's
// graph.max_pool_grad; the BN running statistics are not parameters.

// RUN: nnx-opt %s -p graph-autodiff | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME:    -> (tensor<f32> {nnx.name = "loss"}, tensor<4x3x3x3xf32> {nnx.name = "grad_conv.weight"}, tensor<4xf32> {nnx.name = "grad_bn.weight"}, tensor<4xf32> {nnx.name = "grad_bn.bias"}, tensor<2x4xf32> {nnx.name = "grad_fc.weight"})
// CHECK-NOT:     grad_bn.running
// CHECK:         graph.max_pool_grad(%n, %{{.*}}) {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, kernel_shape = array<i64: 2, 2>, ceil_mode = 0 : i64}
// CHECK:         graph.conv_weight_grad(%x, %{{.*}}) {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, kernel_shape = array<i64: 3, 3>}
// CHECK-NOT:     graph.conv_transpose
// CHECK:         func.return
func.func @main(%x: tensor<2x3x8x8xf32> {nnx.name = "x"}) -> (tensor<2x2xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<0.1> : tensor<4x3x3x3xf32> loc("conv.weight")
  %c = graph.conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
  %s = graph.constant dense<1.0> : tensor<4xf32> loc("bn.weight")
  %bb = graph.constant dense<0.0> : tensor<4xf32> loc("bn.bias")
  %rm = graph.constant dense<0.0> : tensor<4xf32> loc("bn.running_mean")
  %rv = graph.constant dense<1.0> : tensor<4xf32> loc("bn.running_var")
  %n, %m2, %v2 = graph.batch_normalization(%c, %s, %bb, %rm, %rv) {training_mode = 1 : i64} : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %p = graph.max_pool(%n) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x4x4x4xf32>) -> tensor<2x4x2x2xf32>
  %g = graph.global_average_pool(%p) : (tensor<2x4x2x2xf32>) -> tensor<2x4x1x1xf32>
  %shape = graph.constant dense<[2, 4]> : tensor<2xi64>
  %f = graph.reshape(%g, %shape) : (tensor<2x4x1x1xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %fw = graph.constant dense<0.2> : tensor<2x4xf32> loc("fc.weight")
  %y = graph.gemm(%f, %fw) {transB = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
  func.return %y : tensor<2x2xf32>
}
