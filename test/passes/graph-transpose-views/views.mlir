// graph-transpose-views: which Transposes chip-lower may read as strided views of
// their input (`nnx.view`), and which must stay a VPU pass.

// RUN: nnx-opt %s --split-input-file -p graph-transpose-views | FileCheck %s
// RUN: nnx-opt %s --split-input-file -p graph-transpose-views,graph-transpose-views | FileCheck %s

// The heads of an attention layer: a Transpose read only by a batched MatMul, which
// takes tiles of it as they are: a view.
// CHECK-LABEL: func.func @matmul_reader
// CHECK:         graph.transpose(%x) {perm = array<i64: 0, 2, 1, 3>, nnx.view}
func.func @matmul_reader(%x: tensor<1x4x2x3xf32>, %w: tensor<1x2x3x5xf32>) -> tensor<1x2x4x5xf32> {
  %t = graph.transpose(%x) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x3xf32>) -> tensor<1x2x4x3xf32>
  %m = graph.matmul(%t, %w) : (tensor<1x2x4x3xf32>, tensor<1x2x3x5xf32>) -> tensor<1x2x4x5xf32>
  func.return %m : tensor<1x2x4x5xf32>
}

// -----

// Elementwise readers (several of them) read tiles as they are too.
// CHECK-LABEL: func.func @elementwise_readers
// CHECK:         graph.transpose(%x) {perm = array<i64: 1, 0>, nnx.view}
func.func @elementwise_readers(%x: tensor<4x8xf32>, %y: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %t = graph.transpose(%x) {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %r = graph.relu(%t) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %a = graph.add(%t, %r) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  func.return %a : tensor<8x4xf32>
}

// -----

// A returned Transpose is stored row-major: no view.
// CHECK-LABEL: func.func @returned
// CHECK:         graph.transpose(%x) {perm = array<i64: 1, 0>} :
func.func @returned(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %t = graph.transpose(%x) {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return %t : tensor<8x4xf32>
}

// -----

// A Reshape of it needs it row-major (a strided view cannot be reshaped): no view.
// The same for a Transpose of a Transpose (the outer one is returned anyway).
// CHECK-LABEL: func.func @reshaped
// CHECK:         graph.transpose(%x) {perm = array<i64: 1, 0>} :
func.func @reshaped(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %t = graph.transpose(%x) {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %s = graph.constant dense<[32]> : tensor<1xi64>
  %r = graph.reshape(%t, %s) : (tensor<8x4xf32>, tensor<1xi64>) -> tensor<32xf32>
  func.return %r : tensor<32xf32>
}

// -----

// One copying reader is enough to keep it: Concat (like Split, Slice, Gather) copies
// row-major windows; the MatMul reader alone would allow a view.
// CHECK-LABEL: func.func @one_copying_reader
// CHECK:         graph.transpose(%x) {perm = array<i64: 1, 0>} :
func.func @one_copying_reader(%x: tensor<4x8xf32>, %w: tensor<4x2xf32>) -> (tensor<8x2xf32>, tensor<16x4xf32>) {
  %t = graph.transpose(%x) {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %m = graph.matmul(%t, %w) : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  %c = graph.concat(%t, %t) {axis = 0 : i64} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  func.return %m, %c : tensor<8x2xf32>, tensor<16x4xf32>
}

// -----

// A Conv reads row-major input windows: no view. An unused Transpose has no reader
// to benefit: no mark either.
// CHECK-LABEL: func.func @conv_reader
// CHECK:         graph.transpose(%x) {perm = array<i64: 0, 1, 3, 2>} :
// CHECK:         graph.transpose(%x) {perm = array<i64: 0, 1, 3, 2>} :
func.func @conv_reader(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32> {
  %t = graph.transpose(%x) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %u = graph.transpose(%x) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = graph.conv(%t, %w) : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  func.return %c : tensor<1x3x4x4xf32>
}
