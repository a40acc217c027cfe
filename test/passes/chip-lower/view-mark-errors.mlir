// RUN: not nnx-opt %s -p chip-lower 2>&1 | FileCheck %s

// A mark the rules do not allow (the Transpose is returned, stored row-major) is one
// error at the Transpose.
// CHECK: error: 'graph.transpose' op chip-lower: graph.transpose is marked nnx.view but cannot be a view (see graph-transpose-views)
func.func @main(%x: tensor<4x3xf32>) -> tensor<3x4xf32> {
  %t = graph.transpose(%x) {perm = array<i64: 1, 0>, nnx.view} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  func.return %t : tensor<3x4xf32>
}
