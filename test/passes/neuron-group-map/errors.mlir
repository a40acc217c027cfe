// Impossible requests: one line on stderr, non-zero exit.

// RUN: not nnx-opt %s --pass-pipeline='builtin.module(neuron-group-map{mesh=2x2 capacity=64 seed=1})' 2>&1 | FileCheck %s --check-prefix=ERR
// ERR: errors.mlir:[[# @LINE + 11]]:3: error: 'graph.conv' op neuron-group-map: 324 neurons on a 2x2 mesh: total neuron size 324 needs at least 6 groups of capacity 64 but the mesh has only 4 cores
// ERR-NOT: Traceback

// RUN: not nnx-opt %s --pass-pipeline='builtin.module(neuron-group-map{mesh=4by4})' 2>&1 | FileCheck %s --check-prefix=MESH
// MESH: error: 'builtin.module' op neuron-group-map: bad mesh '4by4': expected WxH, e.g. 32x32

// RUN: not nnx-opt %s --pass-pipeline='builtin.module(neuron-group-map{mesh=4x4 capacity=64 algorithm=metis})' 2>&1 | FileCheck %s --check-prefix=ALGO
// ALGO: error: 'builtin.module' op neuron-group-map: algorithm must be 'nnx' or 'seed' (got 'metis')

func.func @cnn(%x: tensor<1x1x8x8xf32>) -> tensor<1x4xf32> {
  %w = graph.constant dense<0.5> : tensor<4x1x3x3xf32>
  %c = graph.conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
  %p = graph.average_pool(%c) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %s = graph.constant dense<[1, 64]> : tensor<2xi64>
  %f = graph.reshape(%p, %s) : (tensor<1x4x4x4xf32>, tensor<2xi64>) -> tensor<1x64xf32>
  %w2 = graph.constant dense<0.25> : tensor<4x64xf32>
  %y = graph.gemm(%f, %w2) {transB = 1 : i64} : (tensor<1x64xf32>, tensor<4x64xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

