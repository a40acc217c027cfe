// Parse and verifier errors: FILE:LINE:COL: error: ..., exit 1, no traceback.

// RUN: not nnx-opt %s --split-input-file 2>&1 | FileCheck %s

// CHECK: diagnostics.mlir:[[# @LINE + 4]]:3: error: 'graph.add' op result #0 has type tensor<3xf32>, operands imply tensor<2xf32>
// CHECK-NOT: Traceback
func.func @verifier(%x: tensor<2xf32>) -> tensor<3xf32> {
  %a = graph.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %s = graph.add(%a, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}

// -----

// CHECK: diagnostics.mlir:[[# @LINE + 3]]:22: error: use of undefined value '%q'
// CHECK-NEXT: %y = graph.add(%x, %q)
func.func @undefined(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = graph.add(%x, %q) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

// CHECK: diagnostics.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: Operation graph.no_such_op is not registered
func.func @unknown(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = graph.no_such_op(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

// CHECK: diagnostics.mlir:[[# @LINE + 3]]:{{[0-9]+}}: error: operand is used with type tensor<2xf32>, but has been previously used or defined with type tensor<4xf32>
func.func @types(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = graph.relu(%x) : (tensor<2xf32>) -> tensor<4xf32>
  %z = graph.relu(%y) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %z : tensor<2xf32>
}
