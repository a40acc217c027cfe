// A residual block: add(conv, x) aliases the conv's neurons (its first operand that
// carries neurons) and connects x's neurons to them; matmul with a constant B and a
// transpose in between. Ops that create no neurons get no annotation.

// RUN: nnx-opt %s --pass-pipeline='builtin.module(neuron-group-map{mesh=4x4 capacity=64 seed=1})' | FileCheck %s

// CHECK-LABEL: func.func @residual
// CHECK:         %c = graph.conv{{.*}}nnx.cores = array<i64: {{[0-9]+(, [0-9]+)*}}>, nnx.neurons = array<i64: 32, 32>
// CHECK:         %a = graph.add(%c, %x) : (
// CHECK:         %t = graph.transpose(%a) {perm = array<i64: 0, 1, 3, 2>} : (
// CHECK:         graph.matmul{{.*}}nnx.cores = array<i64: {{[0-9]+(, [0-9]+)*}}>, nnx.neurons = array<i64: 64, 48>
// CHECK-NOT:     nnx.cores
func.func @residual(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x6xf32> {
  %w = graph.constant dense<1.0> : tensor<2x2x3x3xf32>
  %c = graph.conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  %a = graph.add(%c, %x) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %t = graph.transpose(%a) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %b = graph.constant dense<0.5> : tensor<4x6xf32>
  %m = graph.matmul(%t, %b) : (tensor<1x2x4x4xf32>, tensor<4x6xf32>) -> tensor<1x2x4x6xf32>
  %z = graph.sigmoid(%m) : (tensor<1x2x4x6xf32>) -> tensor<1x2x4x6xf32>
  func.return %z : tensor<1x2x4x6xf32>
}
