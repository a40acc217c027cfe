// neuron-group-map (docs/neuron-mapping.md, section 3.2): every conv/gemm/matmul
// output element is a neuron; relu/pool/reshape alias neurons; each layer op gets the
// cores its neurons occupy.

// RUN: nnx-opt %s --pass-pipeline='builtin.module(neuron-group-map{mesh=4x4 capacity=64 seed=1})' | FileCheck %s
// RUN: nnx-opt %s --pass-pipeline='builtin.module(neuron-group-map{mesh=4x4 capacity=64 seed=1})' | nnx-opt | FileCheck %s
// RUN: nnx-opt %s --pass-pipeline='builtin.module(neuron-group-map{mesh=4x4 capacity=64 seed=1 algorithm=seed})' | FileCheck %s --check-prefix=SEED

// Neurons: 64 inputs (0..63), 256 conv outputs (64..319), 4 gemm outputs (320..323).
// CHECK-LABEL: func.func @cnn
// CHECK:         %c = graph.conv(%x, %w)
// CHECK-SAME:      nnx.cores = array<i64: {{[0-9]+(, [0-9]+)*}}>
// CHECK-SAME:      nnx.neurons = array<i64: 64, 256>
// CHECK-NEXT:    %r = graph.relu(%c) : (
// CHECK-NEXT:    %p = graph.max_pool(%r) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (
// CHECK:         %f = graph.reshape(%p, %s) : (
// CHECK:         %y = graph.gemm(%f, %w2)
// CHECK-SAME:      nnx.cores = array<i64: {{[0-9]+(, [0-9]+)*}}>
// CHECK-SAME:      nnx.neurons = array<i64: 320, 4>
// SEED:          graph.conv{{.*}}nnx.cores = array<i64: {{.*}}>
// SEED:          graph.gemm{{.*}}nnx.cores = array<i64: {{.*}}>
func.func @cnn(%x: tensor<1x1x8x8xf32>) -> tensor<1x4xf32> {
  %w = graph.constant dense<0.5> : tensor<4x1x3x3xf32>
  %c = graph.conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
  %r = graph.relu(%c) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %p = graph.max_pool(%r) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %s = graph.constant dense<[1, 64]> : tensor<2xi64>
  %f = graph.reshape(%p, %s) : (tensor<1x4x4x4xf32>, tensor<2xi64>) -> tensor<1x64xf32>
  %w2 = graph.constant dense<0.25> : tensor<4x64xf32>
  %y = graph.gemm(%f, %w2) {transB = 1 : i64} : (tensor<1x64xf32>, tensor<4x64xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}
