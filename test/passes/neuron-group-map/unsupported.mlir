// An op that consumes neurons but is neither a layer, a data movement, a pool nor
// element-wise is rejected with one line at its location.

// RUN: not nnx-opt %s --pass-pipeline='builtin.module(neuron-group-map{mesh=4x4 capacity=64})' 2>&1 | FileCheck %s --check-prefix=ERR
// ERR: unsupported.mlir:[[# @LINE + 6]]:3: error: 'graph.reduce_sum' op neuron-group-map: cannot derive neurons through graph.reduce_sum (not element-wise: its result shape differs from its neuron operands')
// ERR-NOT: Traceback

func.func @red(%x: tensor<1x16xf32>) -> tensor<1x1xf32> {
  %w = graph.constant dense<0.5> : tensor<16x16xf32>
  %m = graph.matmul(%x, %w) : (tensor<1x16xf32>, tensor<16x16xf32>) -> tensor<1x16xf32>
  %r = graph.reduce_sum(%m) {keepdims = 1 : i64, axes = array<i64: 1>} : (tensor<1x16xf32>) -> tensor<1x1xf32>
  func.return %r : tensor<1x1xf32>
}
