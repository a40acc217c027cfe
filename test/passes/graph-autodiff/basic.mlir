// graph-autodiff: a function becomes one training step (loss + gradients or updated
// parameters), named through nnx.name; the backward ops follow the forward ones.

// RUN: nnx-opt %s -p graph-autodiff | FileCheck %s
// RUN: nnx-opt %s -p 'graph-autodiff{loss=mse optimizer=sgd lr=0.5}' | FileCheck %s --check-prefix=SGD
// RUN: nnx-opt %s -p 'graph-autodiff{optimizer=momentum}' | FileCheck %s --check-prefix=MOM
// RUN: nnx-opt %s -p graph-autodiff --mlir-print-op-generic | nnx-opt | FileCheck %s

// A linear layer with cross-entropy: labels are int64 of the logits' shape without the
// class dim; loss, then grad_<initializer name> per parameter in block order.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    %{{.*}}: tensor<2xi64> {nnx.name = "labels"}
// CHECK-SAME:    -> (tensor<f32> {nnx.name = "loss"}, tensor<3x4xf32> {nnx.name = "grad_fc.weight"}, tensor<3xf32> {nnx.name = "grad_fc.bias"})
// CHECK:         %[[Y:.*]] = graph.gemm
// CHECK:         graph.log_softmax(%[[Y]]) {axis = -1 : i64}
// CHECK:         graph.gather_elements
// CHECK:         %[[LOSS:.*]] = graph.neg
// The weight gradient of Gemm(transB=1): (x^T g)^T; the bias gradient sums the batch.
// CHECK:         %[[XT:.*]] = graph.transpose(%x)
// CHECK:         %[[MM:.*]] = graph.matmul(%[[XT]],
// CHECK:         %[[GW:.*]] = graph.transpose(%[[MM]])
// CHECK:         graph.reduce_sum
// CHECK:         %[[GB:.*]] = graph.reshape
// CHECK:         func.return %[[LOSS]], %[[GW]], %[[GB]]

// mse: labels are a float target of the output's type; sgd returns new_<name>.
// SGD-LABEL:   func.func @main
// SGD-SAME:      %{{.*}}: tensor<2x3xf32> {nnx.name = "labels"}
// SGD-SAME:      {nnx.name = "new_fc.weight"}
// SGD-SAME:      {nnx.name = "new_fc.bias"}
// SGD:           graph.reduce_mean
// SGD:           %[[NW:.*]] = graph.sub(%w,
// SGD:           %[[NB:.*]] = graph.sub(%b,
// SGD:           func.return %{{.*}}, %[[NW]], %[[NB]]

// momentum: one velocity argument per parameter, and its update as a result.
// MOM-LABEL:   func.func @main
// MOM-SAME:      {nnx.name = "velocity_fc.weight"}
// MOM-SAME:      {nnx.name = "velocity_fc.bias"}
// MOM-SAME:      {nnx.name = "new_fc.weight"}
// MOM-SAME:      {nnx.name = "new_velocity_fc.weight"}, tensor<3xf32> {nnx.name = "new_velocity_fc.bias"})
func.func @main(%x: tensor<2x4xf32> {nnx.name = "x"}) -> (tensor<2x3xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<3x4xf32> loc("fc.weight")
  %b = graph.constant dense<0.1> : tensor<3xf32> loc("fc.bias")
  %y = graph.gemm(%x, %w, %b) {transB = 1 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
