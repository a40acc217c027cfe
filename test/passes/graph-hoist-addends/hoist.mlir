// graph-hoist-addends: the ops computing the Add operand of `MatMul -> Add` move before
// the MatMul (so chip-lower can start the accumulators from it), or stay.

// RUN: nnx-opt %s --split-input-file -p graph-hoist-addends | FileCheck %s

// A BERT attention mask built after the scores in the exporter's order: the two ops
// computing it (Sub, Mul, in that order) move before the MatMul.
// CHECK-LABEL: func.func @mask_after_scores
// CHECK:         %[[S:.*]] = graph.sub
// CHECK-NEXT:    %[[M:.*]] = graph.mul(%[[S]]
// CHECK-NEXT:    %[[Q:.*]] = graph.matmul(%q, %k)
// CHECK-NEXT:    graph.add(%[[Q]], %[[M]])
func.func @mask_after_scores(%q: tensor<2x4x8xf32>, %k: tensor<2x8x4xf32>, %mask: tensor<2x1x4xf32>) -> tensor<2x4x4xf32> {
  %one = graph.constant dense<1.0> : tensor<f32>
  %big = graph.constant dense<-10000.0> : tensor<f32>
  %s = graph.matmul(%q, %k) : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %inv = graph.sub(%one, %mask) : (tensor<f32>, tensor<2x1x4xf32>) -> tensor<2x1x4xf32>
  %add = graph.mul(%inv, %big) : (tensor<2x1x4xf32>, tensor<f32>) -> tensor<2x1x4xf32>
  %y = graph.add(%s, %add) : (tensor<2x4x4xf32>, tensor<2x1x4xf32>) -> tensor<2x4x4xf32>
  func.return %y : tensor<2x4x4xf32>
}

// -----

// The addend depends on the MatMul itself (a residual of its own result): it cannot
// come first; the order stays.
// CHECK-LABEL: func.func @depends_on_matmul
// CHECK:         %[[Q:.*]] = graph.matmul
// CHECK-NEXT:    graph.relu(%[[Q]])
func.func @depends_on_matmul(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %m = graph.matmul(%a, %b) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = graph.relu(%m) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = graph.add(%r, %a) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %y : tensor<4x4xf32>
}

// -----

// The MatMul has a second user: its result is needed as it is, no accumulator
// initialisation, nothing moves.
// CHECK-LABEL: func.func @two_users
// CHECK:         graph.matmul
// CHECK-NEXT:    graph.relu(%b)
func.func @two_users(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %m = graph.matmul(%a, %b) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = graph.relu(%b) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = graph.add(%m, %r) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %y, %m : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// The addend is a block argument, or computed before the MatMul already: nothing to
// move (the unrelated Neg after the MatMul stays where it is).
// CHECK-LABEL: func.func @already_first
// CHECK:         graph.relu(%b)
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    graph.neg
func.func @already_first(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %r = graph.relu(%b) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = graph.matmul(%a, %b) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %n = graph.neg(%a) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = graph.add(%m, %r) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %y, %n : tensor<4x4xf32>, tensor<4x4xf32>
}
