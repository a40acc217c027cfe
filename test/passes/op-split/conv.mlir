// op-split on convolutions: the batch axis first, then output channels (whole groups
// for grouped and depthwise convolutions; multiples of the interpreter's 32-channel
// product blocks for plain ones, so a piece computes every element as the whole conv
// does); the pieces are joined by one concat. ConvTranspose is never split.

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

// Batch 1: output channels, in blocks of 32. Each piece gets its slice of the weights
// and the bias (new constants); the input is read whole (every output channel needs
// every input channel). 37 KB in all, 19 KB per half.
// CHECK-LABEL: func.func @conv_channels
// CHECK-NOT:     graph.slice
// CHECK:         graph.conv(%x, %{{.*}}, %{{.*}}) {{.*}} : (tensor<1x8x8x8xf32>, tensor<32x8x3x3xf32>, tensor<32xf32>) -> tensor<1x32x8x8xf32>
// CHECK:         graph.conv(%x, %{{.*}}, %{{.*}}) {{.*}} -> tensor<1x32x8x8xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64} {{.*}} -> tensor<1x64x8x8xf32>
func.func @conv_channels(%x: tensor<1x8x8x8xf32>) -> tensor<1x64x8x8xf32> {
  %w = graph.constant dense<0.5> : tensor<64x8x3x3xf32>
  %b = graph.constant dense<0.25> : tensor<64xf32>
  %y = graph.conv(%x, %w, %b) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xf32>, tensor<64x8x3x3xf32>, tensor<64xf32>) -> tensor<1x64x8x8xf32>
  func.return %y : tensor<1x64x8x8xf32>
}

// -----

// 80 output channels are two whole blocks and a partial one: the cut falls on a block
// boundary (32), never at 40, and the partial block joins the last piece (48).
// CHECK-LABEL: func.func @conv_channel_blocks
// CHECK:         graph.conv(%x, %{{.*}}) {{.*}} -> tensor<1x32x8x8xf32>
// CHECK:         graph.conv(%x, %{{.*}}) {{.*}} -> tensor<1x48x8x8xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64} : (tensor<1x32x8x8xf32>, tensor<1x48x8x8xf32>) -> tensor<1x80x8x8xf32>
func.func @conv_channel_blocks(%x: tensor<1x8x8x8xf32>) -> tensor<1x80x8x8xf32> {
  %w = graph.constant dense<0.5> : tensor<80x8x3x3xf32>
  %y = graph.conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xf32>, tensor<80x8x3x3xf32>) -> tensor<1x80x8x8xf32>
  func.return %y : tensor<1x80x8x8xf32>
}

// -----

// Batch 1 and a single block of 32 output channels: nothing can be cut, the conv stays
// whole although its 92 KB exceed the threshold.
// CHECK-LABEL: func.func @conv_single_block
// CHECK-NEXT:    graph.constant
// CHECK-NEXT:    graph.conv(%x, %w) : (tensor<1x8x24x24xf32>, tensor<32x8x1x1xf32>) -> tensor<1x32x24x24xf32>
// CHECK-NEXT:    func.return
func.func @conv_single_block(%x: tensor<1x8x24x24xf32>) -> tensor<1x32x24x24xf32> {
  %w = graph.constant dense<0.5> : tensor<32x8x1x1xf32>
  %y = graph.conv(%x, %w) : (tensor<1x8x24x24xf32>, tensor<32x8x1x1xf32>) -> tensor<1x32x24x24xf32>
  func.return %y : tensor<1x32x24x24xf32>
}

// -----

// One input channel: the interpreter sums the taps one multiply-add at a time, so the
// output channels cut anywhere (two pieces of 6).
// CHECK-LABEL: func.func @conv_one_input_channel
// CHECK:         graph.conv(%x, %{{.*}}) {{.*}} : (tensor<1x1x32x32xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x32x32xf32>
// CHECK:         graph.conv(%x, %{{.*}}) {{.*}} -> tensor<1x6x32x32xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64}
func.func @conv_one_input_channel(%x: tensor<1x1x32x32xf32>) -> tensor<1x12x32x32xf32> {
  %w = graph.constant dense<0.5> : tensor<12x1x3x3xf32>
  %y = graph.conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x32x32xf32>, tensor<12x1x3x3xf32>) -> tensor<1x12x32x32xf32>
  func.return %y : tensor<1x12x32x32xf32>
}

// -----

// Grouped (4 groups of 4 input and 8 output channels): whole groups; each piece reads
// its groups' input channels (a slice of x) and gets group = 2.
// CHECK-LABEL: func.func @grouped
// CHECK:         %[[X0:.*]] = graph.slice(%x, {{.*}} -> tensor<1x8x16x16xf32>
// CHECK:         graph.conv(%[[X0]], %{{.*}}) {group = 2 : i64{{.*}}} : (tensor<1x8x16x16xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x16x16xf32>
// CHECK:         %[[X1:.*]] = graph.slice(%x, {{.*}} -> tensor<1x8x16x16xf32>
// CHECK:         graph.conv(%[[X1]], %{{.*}}) {group = 2 : i64{{.*}}}
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64} {{.*}} -> tensor<1x32x16x16xf32>
func.func @grouped(%x: tensor<1x16x16x16xf32>) -> tensor<1x32x16x16xf32> {
  %w = graph.constant dense<0.5> : tensor<32x4x3x3xf32>
  %y = graph.conv(%x, %w) {group = 4 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x16xf32>, tensor<32x4x3x3xf32>) -> tensor<1x32x16x16xf32>
  func.return %y : tensor<1x32x16x16xf32>
}

// -----

// Strides, dilations and asymmetric pads are kept by every piece (batch split).
// CHECK-LABEL: func.func @strided_dilated
// CHECK:         graph.conv({{.*}}) {strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>} : (tensor<1x8x24x24xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x11x11xf32>
// CHECK:         graph.conv({{.*}}) {strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>}
// CHECK:         graph.concat({{.*}}) {axis = 0 : i64}
func.func @strided_dilated(%x: tensor<2x8x24x24xf32>) -> tensor<2x16x11x11xf32> {
  %w = graph.constant dense<0.5> : tensor<16x8x3x3xf32>
  %y = graph.conv(%x, %w) {strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>} : (tensor<2x8x24x24xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x11x11xf32>
  func.return %y : tensor<2x16x11x11xf32>
}

// -----

// ConvTranspose has no split rule: left whole.
// CHECK-LABEL: func.func @conv_transpose
// CHECK-NEXT:    graph.constant
// CHECK-NEXT:    graph.conv_transpose
// CHECK-NEXT:    func.return
func.func @conv_transpose(%x: tensor<1x16x16x16xf32>) -> tensor<1x16x32x32xf32> {
  %w = graph.constant dense<0.5> : tensor<16x16x2x2xf32>
  %y = graph.conv_transpose(%x, %w) {strides = array<i64: 2, 2>} : (tensor<1x16x16x16xf32>, tensor<16x16x2x2xf32>) -> tensor<1x16x32x32xf32>
  func.return %y : tensor<1x16x32x32xf32>
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
