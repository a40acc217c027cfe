// graph-fuse: 0.5 * x * (1 + erf(x / sqrt(2))) written out -> graph.gelu, in the
// association orders exporters produce; near misses are left alone.

// RUN: nnx-opt %s -p graph-fuse | FileCheck %s
// RUN: nnx-opt %s -p graph-fuse,dce | FileCheck %s --check-prefix=DCE
// RUN: nnx-opt %s -p graph-fuse --mlir-print-op-generic | nnx-opt | FileCheck %s

// (x * a) * 0.5 with x / sqrt(2): the form torch exports.
// CHECK-LABEL: func.func @torch_form
// CHECK:         %[[G:.*]] = graph.gelu(%x) {approximate = "none"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NOT:     graph.erf
// CHECK:         func.return %[[G]]
// DCE-LABEL:   func.func @torch_form
// DCE-NEXT:      graph.gelu
// DCE-NEXT:      func.return
func.func @torch_form(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %h = graph.constant dense<0.5> : tensor<f32>
  %d = graph.div(%x, %s) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %e = graph.erf(%d) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %a = graph.add(%e, %one) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = graph.mul(%x, %a) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = graph.mul(%m, %h) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// (x * 0.5) * a with x * (1/sqrt(2)), constants first, a 1-element rank-1 constant.
// CHECK-LABEL: func.func @half_first
// CHECK:         %[[G:.*]] = graph.gelu(%x) {approximate = "none"}
// CHECK-NOT:     graph.erf
// CHECK:         func.return %[[G]]
func.func @half_first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.constant dense<0.707106769> : tensor<1xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %h = graph.constant dense<0.5> : tensor<f32>
  %xh = graph.mul(%h, %x) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %d = graph.mul(%r, %x) : (tensor<1xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = graph.erf(%d) : (tensor<4xf32>) -> tensor<4xf32>
  %a = graph.add(%one, %e) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %y = graph.mul(%xh, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// x * (a * 0.5)
// CHECK-LABEL: func.func @half_on_a
// CHECK:         graph.gelu(%x)
// CHECK-NOT:     graph.erf
func.func @half_on_a(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %h = graph.constant dense<0.5> : tensor<f32>
  %d = graph.div(%x, %s) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = graph.erf(%d) : (tensor<4xf32>) -> tensor<4xf32>
  %a = graph.add(%e, %one) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %ah = graph.mul(%a, %h) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %y = graph.mul(%x, %ah) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// Not GELU: a different constant (x / 2), an intermediate used elsewhere.
// CHECK-LABEL: func.func @near_misses
// CHECK-NOT:     graph.gelu
// CHECK:         func.return
func.func @near_misses(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %s = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %h = graph.constant dense<0.5> : tensor<f32>
  %d = graph.div(%x, %two) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = graph.erf(%d) : (tensor<4xf32>) -> tensor<4xf32>
  %a = graph.add(%e, %one) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m = graph.mul(%x, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = graph.mul(%m, %h) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %d2 = graph.div(%x, %s) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e2 = graph.erf(%d2) : (tensor<4xf32>) -> tensor<4xf32>
  %a2 = graph.add(%e2, %one) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m2 = graph.mul(%x, %a2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y2 = graph.mul(%m2, %h) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %y, %y2, %a2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
