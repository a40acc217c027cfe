// sparsify options: index form, weight order, neuron connection data, group pruning,
// min-sparsity.

// RUN: nnx-opt %s --pass-pipeline='builtin.module(sparsify{weight-threshold=0.5 index-form=stride weight-order=per-input neuron-threshold=0.0})' | FileCheck %s --check-prefix=STRIDE
// RUN: nnx-opt %s --pass-pipeline='builtin.module(sparsify{weight-threshold=0.5 neuron-threshold=0.25 neuron-groups=2 neuron-group-threshold=0.1 neuron-group-count=1})' | FileCheck %s --check-prefix=NEURON
// RUN: nnx-opt %s --pass-pipeline='builtin.module(sparsify{weight-threshold=-1 weight-groups=3 weight-group-threshold=0.5 weight-group-count=1})' | FileCheck %s --check-prefix=GROUPS
// RUN: nnx-opt %s --pass-pipeline='builtin.module(sparsify{weight-threshold=0.5 min-sparsity=0.6})' | FileCheck %s --check-prefix=MIN

// Per-input stride data are converted to per-output before the AND with the neurons'.
// STRIDE:      %[[W:.*]] = graph.constant dense<{{.*}}> : tensor<3x4xf32>
// STRIDE-NEXT: %[[WC:.*]] = sparse.connect %[[W]] {threshold = 5.000000e-01 : f64} : tensor<3x4xf32> -> !sparse.conn<stride, 4x3, per_input>
// STRIDE-NEXT: %[[PO:.*]] = sparse.convert %[[WC]] : !sparse.conn<stride, 4x3, per_input> -> !sparse.conn<stride, 3x4, per_output>
// STRIDE-NEXT: %[[NC:.*]] = sparse.connect %x {threshold = 0.000000e+00 : f64} : tensor<2x4xf32> -> !sparse.conn<stride, 2x4, neuron>
// STRIDE-NEXT: %[[C:.*]] = sparse.combine %[[NC]], %[[PO]] : !sparse.conn<stride, 2x4, neuron>, !sparse.conn<stride, 3x4, per_output> -> !sparse.conn<stride, 2x3x4, per_output>
// STRIDE-NEXT: %y = sparse.fc(%x, %[[W]]) conn(%[[C]]) {nnx.sparsity = 3.333330e-01 : f32} : (tensor<2x4xf32>, tensor<3x4xf32>), !sparse.conn<stride, 2x3x4, per_output> -> tensor<2x3xf32>

// Neuron group pruning of each activation row, then neuron connection data.
// NEURON:      %[[G:.*]] = sparse.group_prune %x {groups = 2 : i64, threshold = 1.000000e-01 : f64, count_threshold = 1 : i64, axis = 1 : i64} : tensor<2x4xf32> -> tensor<2x4xf32>
// NEURON-NEXT: %[[NC:.*]] = sparse.connect %[[G]] {threshold = 2.500000e-01 : f64} : tensor<2x4xf32> -> !sparse.conn<direct, 2x4, neuron>
// NEURON-NEXT: %[[C:.*]] = sparse.combine %[[NC]], %{{.*}} : !sparse.conn<direct, 2x4, neuron>, !sparse.conn<direct, 3x4, per_output> -> !sparse.conn<direct, 2x3x4, per_output>
// NEURON-NEXT: %y = sparse.fc(%[[G]], %{{.*}}) conn(%[[C]])

// Three groups of four weights: a group with more than one |w| <= 0.5 is deleted
// (rows 1 and 2 of the [out, in] matrix), the first row is kept whole, zeros dropped.
// GROUPS:      graph.constant dense<{{\[}}[1.000000e+00, -9.000000e-01, 6.000000e-01, 1.500000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<3x4xf32>
// GROUPS:      sparse.connect %{{.*}} {threshold = 0.000000e+00 : f64}
// GROUPS:      nnx.sparsity = 6.666670e-01 : f32

// 33% < 60%: left dense.
// MIN-NOT:     sparse.
// MIN:         graph.gemm
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = graph.constant dense<[[1.0, -0.9, 0.6, 1.5], [0.2, -0.6, -0.05, 0.7], [0.0, 0.8, -0.4, 2.0]]> : tensor<3x4xf32>
  %y = graph.gemm(%x, %w) {transB = 1 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
