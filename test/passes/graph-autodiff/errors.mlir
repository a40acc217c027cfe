// graph-autodiff: an op with no backward rule between a parameter and the loss is one
// error naming the op and its location; bad options are one line too.

// RUN: not nnx-opt %s -p graph-autodiff 2>&1 | FileCheck %s
// RUN: not nnx-opt %s -p 'graph-autodiff{loss=hinge}' 2>&1 | FileCheck %s --check-prefix=LOSS

// CHECK: errors.mlir:14:3: error: 'graph.cos' op graph-autodiff: no backward rule for graph.cos (ONNX Cos), which lies between a parameter and the loss
// CHECK-NOT: Traceback
// LOSS: graph-autodiff: loss must be one of cross-entropy, mse, not 'hinge'
// LOSS-NOT: Traceback
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %w = graph.constant dense<0.5> : tensor<2x3xf32>
  %m = graph.mul(%x, %w) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = graph.cos(%m) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
