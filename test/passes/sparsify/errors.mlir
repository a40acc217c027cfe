// Impossible sparsify options: one line, exit 1, no traceback, no output file.

// RUN: not nnx-opt %s -p 'sparsify{index-form=csr}' 2>&1 | FileCheck %s --check-prefix=FORM
// RUN: not nnx-opt %s -p 'sparsify{weight-order=rows}' 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not nnx-opt %s -p 'sparsify{min-sparsity=1.5}' 2>&1 | FileCheck %s --check-prefix=MIN
// RUN: not nnx-opt %s -p 'sparsify{weight-groups=13}' 2>&1 | FileCheck %s --check-prefix=GROUPS
// RUN: rm -f %t.out
// RUN: not nnx-opt %s -p 'sparsify{weight-groups=13}' -o %t.out
// RUN: not ls %t.out

// FORM: error: sparsify: index-form must be direct or stride, not 'csr'
// FORM-NOT: Traceback
// ORDER: error: sparsify: weight-order must be per-output or per-input, not 'rows'
// MIN: error: sparsify: min-sparsity must be in [0, 1], got 1.5
// GROUPS: errors.mlir:[[# @LINE + 4]]:3: error: {{.*}}sparsify: graph.gemm: weight-groups=13 exceeds the 12 weights
// GROUPS-NOT: Traceback
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = graph.constant dense<[[1.0, -0.9, 0.6, 1.5], [0.2, -0.6, -0.05, 0.7], [0.0, 0.8, -0.4, 2.0]]> : tensor<3x4xf32>
  %y = graph.gemm(%x, %w) {transB = 1 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
