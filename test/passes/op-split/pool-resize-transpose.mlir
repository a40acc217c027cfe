// op-split on pooling and Resize (batch, then channels: their spatial axes are
// reduced or resized) and Transpose (only axes the permutation keeps in place).

// RUN: nnx-opt %s -split-input-file -p 'op-split{threshold=100000}' | FileCheck %s

// MaxPool with batch 1 (640 KB of data): channels, 4 at a time (80 KB each).
// CHECK-LABEL: func.func @maxpool
// CHECK:         graph.slice(%x, {{.*}} -> tensor<1x4x64x64xf32>
// CHECK:         graph.max_pool({{.*}} -> tensor<1x4x32x32xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64} {{.*}} -> tensor<1x32x32x32xf32>
func.func @maxpool(%x: tensor<1x32x64x64xf32>) -> tensor<1x32x32x32xf32> {
  %y = graph.max_pool(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x32x64x64xf32>) -> tensor<1x32x32x32xf32>
  func.return %y : tensor<1x32x32x32xf32>
}

// -----

// Resize by scales with batch 2: the batch axis; scales are shared.
// CHECK-LABEL: func.func @resize
// CHECK:         graph.slice(%x, {{.*}} -> tensor<1x4x32x32xf32>
// CHECK:         graph.resize({{.*}} -> tensor<1x4x64x64xf32>
// CHECK:         graph.concat({{.*}}) {axis = 0 : i64} {{.*}} -> tensor<2x4x64x64xf32>
func.func @resize(%x: tensor<2x4x32x32xf32>) -> tensor<2x4x64x64xf32> {
  %s = graph.constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
  %y = graph.resize(%x, none, %s) {mode = "nearest"} : (tensor<2x4x32x32xf32>, tensor<4xf32>) -> tensor<2x4x64x64xf32>
  func.return %y : tensor<2x4x64x64xf32>
}

// -----

// A transpose over C and W (perm 0,3,2,1) with batch 1 splits H, the one other axis
// it keeps in place.
// CHECK-LABEL: func.func @transpose
// CHECK:         graph.slice(%x, {{.*}} -> tensor<1x16x{{[0-9]+}}x64xf32>
// CHECK:         graph.transpose({{.*}}) {perm = array<i64: 0, 3, 2, 1>}
// CHECK:         graph.concat({{.*}}) {axis = 2 : i64} {{.*}} -> tensor<1x64x64x16xf32>
func.func @transpose(%x: tensor<1x16x64x64xf32>) -> tensor<1x64x64x16xf32> {
  %y = graph.transpose(%x) {perm = array<i64: 0, 3, 2, 1>} : (tensor<1x16x64x64xf32>) -> tensor<1x64x64x16xf32>
  func.return %y : tensor<1x64x64x16xf32>
}

// -----

// AveragePool with batch 2 (160 KB): the batch axis first (80 KB per image).
// CHECK-LABEL: func.func @avgpool
// CHECK:         graph.slice(%x, {{.*}} -> tensor<1x16x32x32xf32>
// CHECK:         graph.average_pool({{.*}}) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32>
// CHECK:         graph.concat({{.*}}) {axis = 0 : i64} {{.*}} -> tensor<2x16x16x16xf32>
func.func @avgpool(%x: tensor<2x16x32x32xf32>) -> tensor<2x16x16x16xf32> {
  %y = graph.average_pool(%x) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x16x32x32xf32>) -> tensor<2x16x16x16xf32>
  func.return %y : tensor<2x16x16x16xf32>
}

// -----

// Global pooling reduces all spatial axes: channels only, three balanced pieces
// (22, 21, 21) of the 256 KB input.
// CHECK-LABEL: func.func @global_pool
// CHECK:         graph.global_average_pool({{.*}}) : (tensor<1x22x32x32xf32>) -> tensor<1x22x1x1xf32>
// CHECK:         graph.global_average_pool({{.*}}) : (tensor<1x21x32x32xf32>) -> tensor<1x21x1x1xf32>
// CHECK:         graph.global_average_pool({{.*}}) : (tensor<1x21x32x32xf32>) -> tensor<1x21x1x1xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64} {{.*}} -> tensor<1x64x1x1xf32>
func.func @global_pool(%x: tensor<1x64x32x32xf32>) -> tensor<1x64x1x1xf32> {
  %y = graph.global_average_pool(%x) : (tensor<1x64x32x32xf32>) -> tensor<1x64x1x1xf32>
  func.return %y : tensor<1x64x1x1xf32>
}
