// sparsify (docs/sparse-mapping.md, section 4): constant weights pruned at |w| <= 0.5
// into a new constant, direct per-output connection data built from it, and the
// compute op made sparse.

// RUN: nnx-opt %s --pass-pipeline='builtin.module(sparsify{weight-threshold=0.5})' | FileCheck %s
// RUN: nnx-opt %s -p 'sparsify{weight-threshold=0.5}' | nnx-opt | FileCheck %s
// RUN: nnx-opt %s --pass-pipeline='builtin.module(sparsify{weight-threshold=0.5})' --mlir-print-op-generic | nnx-opt | FileCheck %s

// CHECK-LABEL: func.func @gemm
// CHECK-NEXT:    %[[W:w_sparse]] = graph.constant dense<{{\[}}[0.000000e+00, -9.000000e-01, 0.000000e+00, 1.500000e+00], [0.000000e+00, -6.000000e-01, 0.000000e+00, 7.000000e-01], [0.000000e+00, 8.000000e-01, 0.000000e+00, 2.000000e+00]]> : tensor<3x4xf32>
// CHECK-NEXT:    %b = graph.constant
// CHECK-NEXT:    %[[C:w_sparse_conn]] = sparse.connect %[[W]] {threshold = 5.000000e-01 : f64} : tensor<3x4xf32> -> !sparse.conn<direct, 3x4, per_output>
// CHECK-NEXT:    %y = sparse.fc(%x, %[[W]], %b) conn(%[[C]]) {nnx.sparsity = 5.000000e-01 : f32} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>), !sparse.conn<direct, 3x4, per_output> -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %y
func.func @gemm(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = graph.constant dense<[[0.1, -0.9, 0.3, 1.5], [0.2, -0.6, -0.05, 0.7], [0.0, 0.8, -0.4, 2.0]]> : tensor<3x4xf32>
  %b = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %y = graph.gemm(%x, %w, %b) {transB = 1 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// transB = 0: the weights become [out, in] = B^T (one row per output neuron)
// CHECK-LABEL: func.func @gemm_b_in_out
// CHECK:         graph.constant dense<{{\[}}[0.000000e+00, 0.000000e+00], [2.000000e+00, -3.000000e+00]]> : tensor<2x2xf32>
// CHECK:         sparse.fc(%x, %{{.*}}) conn(%{{.*}}) {nnx.sparsity = 5.000000e-01 : f32}
// CHECK-NOT:     graph.gemm
func.func @gemm_b_in_out(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %w = graph.constant dense<[[0.1, 2.0], [0.2, -3.0]]> : tensor<2x2xf32>
  %y = graph.gemm(%x, %w) : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// MatMul keeps B as [K, N]; its connection data say so with layout = "in_out".
// CHECK-LABEL: func.func @matmul
// CHECK-NEXT:    %[[W:.*]] = graph.constant dense<{{\[}}[0.000000e+00, -9.000000e-01, 0.000000e+00], [1.500000e+00, 0.000000e+00, -6.000000e-01], [0.000000e+00, 7.000000e-01, 0.000000e+00], [8.000000e-01, 0.000000e+00, 2.000000e+00]]> : tensor<4x3xf32>
// CHECK-NEXT:    %[[C:.*]] = sparse.connect %[[W]] {threshold = 5.000000e-01 : f64, layout = "in_out"} : tensor<4x3xf32> -> !sparse.conn<direct, 3x4, per_output>
// CHECK-NEXT:    %y = sparse.matmul(%x, %[[W]]) conn(%[[C]]) {nnx.sparsity = 5.000000e-01 : f32} : (tensor<1x4xf32>, tensor<4x3xf32>), !sparse.conn<direct, 3x4, per_output> -> tensor<1x3xf32>
func.func @matmul(%x: tensor<1x4xf32>) -> tensor<1x3xf32> {
  %w = graph.constant dense<[[0.1, -0.9, 0.3], [1.5, 0.2, -0.6], [-0.05, 0.7, 0.0], [0.8, -0.4, 2.0]]> : tensor<4x3xf32>
  %y = graph.matmul(%x, %w) : (tensor<1x4xf32>, tensor<4x3xf32>) -> tensor<1x3xf32>
  func.return %y : tensor<1x3xf32>
}

// Conv: one string per output channel over its receptive field (Cin/group * kh * kw).
// The control group and discardable attributes move to the sparse op.
// CHECK-LABEL: func.func @conv
// CHECK:         %[[W:.*]] = graph.constant dense<{{\[}}{{\[}}{{\[}}[0.000000e+00, 1.000000e+00], [0.000000e+00, -2.000000e+00]]], {{\[}}{{\[}}[3.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00]]]]> : tensor<2x1x2x2xf32>
// CHECK:         %[[C:.*]] = sparse.connect %[[W]] {threshold = 5.000000e-01 : f64} after(%{{.*}} : tensor<1x1x3x3xf32>) : tensor<2x1x2x2xf32> -> !sparse.conn<direct, 2x4, per_output>
// CHECK:         %y = sparse.conv(%x, %[[W]]) conn(%[[C]]) {nnx.tag = "c1", nnx.sparsity = 6.250000e-01 : f32, pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 1, 1>} after(%r : tensor<1x1x3x3xf32>) : (tensor<1x1x3x3xf32>, tensor<2x1x2x2xf32>), !sparse.conn<direct, 2x4, per_output> -> tensor<1x2x3x3xf32>
func.func @conv(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %r = graph.relu(%x) : (tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  %w = graph.constant dense<[[[[0.1, 1.0], [0.5, -2.0]]], [[[3.0, 0.0], [-0.2, 0.3]]]]> : tensor<2x1x2x2xf32>
  %y = graph.conv(%x, %w) {pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 1, 1>, nnx.tag = "c1"} after(%r : tensor<1x1x3x3xf32>) : (tensor<1x1x3x3xf32>, tensor<2x1x2x2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// Not rewritten: a non-constant weight, and a gemm with alpha != 1.
// CHECK-LABEL: func.func @untouched
// CHECK:         graph.matmul
// CHECK:         graph.gemm
// CHECK-NOT:     sparse.
func.func @untouched(%x: tensor<1x2xf32>, %w: tensor<2x2xf32>) -> tensor<1x2xf32> {
  %y = graph.matmul(%x, %w) : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  %c = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %z = graph.gemm(%y, %c) {alpha = 2.0 : f32} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  func.return %z : tensor<1x2xf32>
}
