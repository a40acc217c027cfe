// op-split on convolutions: the batch axis first, then output channels (whole groups
// for grouped and depthwise convolutions); the pieces are joined by one concat.

// RUN: nnx-opt %s -split-input-file -p 'op-split{threshold=30000}' | FileCheck %s

// Batch 2 of 1x8x16x16 (16 KiB each), 35 KB in all: halves of the input and the output fit 30 KB, so the conv
// splits into two batch pieces; the weights stay whole.
// CHECK-LABEL: func.func @conv_batch
// CHECK:         %[[X0:.*]] = graph.slice(%x, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x8x16x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x8x16x16xf32>
// CHECK:         %[[C0:.*]] = graph.conv(%[[X0]], %w) {{.*}} -> tensor<1x8x16x16xf32>
// CHECK:         %[[X1:.*]] = graph.slice(%x
// CHECK:         %[[C1:.*]] = graph.conv(%[[X1]], %w)
// CHECK:         %[[Y:.*]] = graph.concat(%[[C0]], %[[C1]]) {axis = 0 : i64} : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<2x8x16x16xf32>
// CHECK:         func.return %[[Y]]
func.func @conv_batch(%x: tensor<2x8x16x16xf32>) -> tensor<2x8x16x16xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x3x3xf32>
  %y = graph.conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<2x8x16x16xf32>
  func.return %y : tensor<2x8x16x16xf32>
}

// -----

// Batch 1: output channels. Each piece gets its slice of the weights and the bias
// (new constants; 2 x 29 KB); the input is read whole (every output channel needs every input
// channel).
// CHECK-LABEL: func.func @conv_channels
// CHECK-NOT:     graph.slice
// CHECK:         graph.conv(%x, %{{.*}}, %{{.*}}) {{.*}} : (tensor<1x8x16x16xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32>
// CHECK:         graph.conv(%x, %{{.*}}, %{{.*}}) {{.*}} -> tensor<1x16x16x16xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64} {{.*}} -> tensor<1x32x16x16xf32>
func.func @conv_channels(%x: tensor<1x8x16x16xf32>) -> tensor<1x32x16x16xf32> {
  %w = graph.constant dense<0.5> : tensor<32x8x3x3xf32>
  %b = graph.constant dense<0.25> : tensor<32xf32>
  %y = graph.conv(%x, %w, %b) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>, tensor<32x8x3x3xf32>, tensor<32xf32>) -> tensor<1x32x16x16xf32>
  func.return %y : tensor<1x32x16x16xf32>
}

// -----

// Depthwise (group = channels): a piece is a depthwise conv over its own channels:
// input, weights and the group count are all sliced (the fewest equal pieces that fit: 6 channels, the last one 2).
// CHECK-LABEL: func.func @depthwise
// CHECK:         %[[X0:.*]] = graph.slice(%x, {{.*}} -> tensor<1x6x24x24xf32>
// CHECK:         graph.conv(%[[X0]], %{{.*}}) {group = 6 : i64{{.*}}} : (tensor<1x6x24x24xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x24x24xf32>
// CHECK:         graph.concat
func.func @depthwise(%x: tensor<1x32x24x24xf32>) -> tensor<1x32x24x24xf32> {
  %w = graph.constant dense<0.5> : tensor<32x1x3x3xf32>
  %y = graph.conv(%x, %w) {group = 32 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x24x24xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x24x24xf32>
  func.return %y : tensor<1x32x24x24xf32>
}

// -----

// Small enough: untouched.
// CHECK-LABEL: func.func @small
// CHECK-NEXT:    graph.constant
// CHECK-NEXT:    graph.conv
// CHECK-NEXT:    func.return
func.func @small(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<2x2x1x1xf32>
  %y = graph.conv(%x, %w) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
