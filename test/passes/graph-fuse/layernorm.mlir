// graph-fuse: LayerNorm written out as exporters before opset 17 do -> one
// graph.layer_normalization; axes as an attribute (opset < 18) or an input.

// RUN: nnx-opt %s -p graph-fuse,dce | FileCheck %s
// RUN: nnx-opt %s -p graph-fuse --mlir-print-op-generic | nnx-opt -p dce | FileCheck %s

// CHECK-LABEL: func.func @ln_attr_axes
// CHECK-NEXT:    %g = graph.constant
// CHECK-NEXT:    %b = graph.constant
// CHECK-NEXT:    %{{.*}} = graph.layer_normalization(%x, %g, %b) {axis = 2 : i64, epsilon = 1.000000e-12 : f32} : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
// CHECK-NEXT:    func.return
func.func @ln_attr_axes(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %g = graph.constant dense<2.0> : tensor<8xf32>
  %b = graph.constant dense<0.5> : tensor<8xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-12> : tensor<f32>
  %m = graph.reduce_mean(%x) {axes = array<i64: -1>} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %d = graph.sub(%x, %m) : (tensor<1x4x8xf32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
  %p = graph.pow(%d, %two) : (tensor<1x4x8xf32>, tensor<f32>) -> tensor<1x4x8xf32>
  %v = graph.reduce_mean(%p) {axes = array<i64: -1>} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %ve = graph.add(%v, %eps) : (tensor<1x4x1xf32>, tensor<f32>) -> tensor<1x4x1xf32>
  %s = graph.sqrt(%ve) : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %n = graph.div(%d, %s) : (tensor<1x4x8xf32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
  %y = graph.mul(%n, %g) : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %z = graph.add(%y, %b) : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  func.return %z : tensor<1x4x8xf32>
}

// axes as a constant input, d * d, gamma first, no beta
// CHECK-LABEL: func.func @ln_input_axes_no_beta
// CHECK:         graph.layer_normalization(%x, %g) {axis = 1 : i64, epsilon = {{.*}} : f32}
// CHECK-NOT:     graph.reduce_mean
func.func @ln_input_axes_no_beta(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %g = graph.constant dense<2.0> : tensor<8xf32>
  %ax = graph.constant dense<[1]> : tensor<1xi64>
  %eps = graph.constant dense<1.0e-5> : tensor<f32>
  %m = graph.reduce_mean(%x, %ax) : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %d = graph.sub(%x, %m) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %p = graph.mul(%d, %d) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean(%p, %ax) : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %ve = graph.add(%eps, %v) : (tensor<f32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %s = graph.sqrt(%ve) : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = graph.div(%d, %s) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = graph.mul(%g, %n) : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// Not LayerNorm: the variance over another axis than the mean.
// CHECK-LABEL: func.func @near_miss
// CHECK-NOT:     graph.layer_normalization
// CHECK:         func.return
func.func @near_miss(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %g = graph.constant dense<2.0> : tensor<8xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %eps = graph.constant dense<1.0e-5> : tensor<f32>
  %m = graph.reduce_mean(%x) {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = graph.sub(%x, %m) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %p = graph.pow(%d, %two) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %v = graph.reduce_mean(%p) {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<1x1xf32>
  %ve = graph.add(%v, %eps) : (tensor<1x1xf32>, tensor<f32>) -> tensor<1x1xf32>
  %s = graph.sqrt(%ve) : (tensor<1x1xf32>) -> tensor<1x1xf32>
  %n = graph.div(%d, %s) : (tensor<4x8xf32>, tensor<1x1xf32>) -> tensor<4x8xf32>
  %y = graph.mul(%n, %g) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
