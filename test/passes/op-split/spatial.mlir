// op-split{spatial=true}: Conv (plain, grouped, depthwise) and MaxPool/AveragePool
// may also cut their output rows (axis 2), the last preference after batch and
// channels, used when those pieces cannot fit the threshold (e.g. the input alone is
// too big: a channel piece of a conv reads the whole input). A piece computing output
// rows [a, b) reads the input rows [a*s - pt, (b-1)*s + dk - pt) clipped to the input
// (dk = (k-1)*d + 1) and keeps a top/bottom pad only where it touches the real border,
// so every output element reads the same inputs and pads (docs/topological-order.md,
// "Operator splitting"). Without spatial=true (the OFF run) row pieces never appear.

// RUN: nnx-opt %s -split-input-file -p 'op-split{threshold=10000 spatial=true}' | FileCheck %s
// RUN: nnx-opt %s -split-input-file -p 'op-split{threshold=10000}' | FileCheck %s --check-prefix=OFF

// 16 output channels are one product block (no channel cut) and batch 1: rows.
// Stride 2, pads top 2 / bottom 1, 11 output rows in 5 pieces (3, 2, 2, 2, 2) of at
// most 10,000 bytes (weights 4,672 bytes in every piece). Piece 0 reads input rows
// [0, 5) with the 2 top pad rows, the middle pieces read 5 rows (a halo of one row
// shared with the next piece) and no pads, the last reads [16, 20) and the bottom pad.
// CHECK-LABEL: func.func @conv_rows
// CHECK:         graph.slice(%x, {{.*}} -> tensor<1x8x5x20xf32>
// CHECK-NEXT:    graph.conv(%{{.*}}, %w, %b) {pads = array<i64: 2, 1, 0, 1>, strides = array<i64: 2, 2>} {{.*}} -> tensor<1x16x3x10xf32>
// CHECK-COUNT-3: graph.conv(%{{.*}}, %w, %b) {pads = array<i64: 0, 1, 0, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x5x20xf32>, {{.*}} -> tensor<1x16x2x10xf32>
// CHECK:         graph.slice(%x, {{.*}} -> tensor<1x8x4x20xf32>
// CHECK-NEXT:    graph.conv(%{{.*}}, %w, %b) {pads = array<i64: 0, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x4x20xf32>, {{.*}} -> tensor<1x16x2x10xf32>
// CHECK-NEXT:    graph.concat({{.*}}) {axis = 2 : i64} {{.*}} -> tensor<1x16x11x10xf32>
// OFF-LABEL:   func.func @conv_rows
// OFF-NEXT:      graph.constant
// OFF-NEXT:      graph.constant
// OFF-NEXT:      graph.conv(%x, %w, %b)
// OFF-NEXT:      func.return
func.func @conv_rows(%x: tensor<1x8x20x20xf32>) -> tensor<1x16x11x10xf32> {
  %w = graph.constant dense<0.5> : tensor<16x8x3x3xf32>
  %b = graph.constant dense<0.25> : tensor<16xf32>
  %y = graph.conv(%x, %w, %b) {pads = array<i64: 2, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x20x20xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x11x10xf32>
  func.return %y : tensor<1x16x11x10xf32>
}

// -----

// Two blocks of 32 output channels whose pieces fit (9,792 bytes each, the input
// whole): channels are preferred, no row cut.
// CHECK-LABEL: func.func @conv_channels_first
// CHECK-NOT:     graph.slice
// CHECK:         graph.conv(%x, %{{.*}}) {pads = array<i64: 1, 1, 1, 1>} {{.*}} -> tensor<1x32x6x6xf32>
// CHECK:         graph.conv(%x, %{{.*}}) {pads = array<i64: 1, 1, 1, 1>} {{.*}} -> tensor<1x32x6x6xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64}
func.func @conv_channels_first(%x: tensor<1x4x6x6xf32>) -> tensor<1x64x6x6xf32> {
  %w = graph.constant dense<0.5> : tensor<64x4x3x3xf32>
  %y = graph.conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x6x6xf32>, tensor<64x4x3x3xf32>) -> tensor<1x64x6x6xf32>
  func.return %y : tensor<1x64x6x6xf32>
}

// -----

// Neither axis fits alone: a channel piece has 4,608 bytes of weights and 8 KiB of
// output, a one-row piece all 9,216 bytes of weights. The fewest pieces of both
// (2 channel blocks x 2 row halves, 7,424 bytes each): channels first, then each
// channel piece by rows (top pad in the first half, bottom pad in the second).
// CHECK-LABEL: func.func @conv_rows_and_channels
// CHECK:         graph.conv(%{{.*}}, %[[W0:.*]]) {pads = array<i64: 1, 1, 0, 1>} : (tensor<1x4x5x8xf32>, tensor<32x4x3x3xf32>) -> tensor<1x32x4x8xf32>
// CHECK:         graph.conv(%{{.*}}, %[[W0]]) {pads = array<i64: 0, 1, 1, 1>} : (tensor<1x4x5x8xf32>, tensor<32x4x3x3xf32>) -> tensor<1x32x4x8xf32>
// CHECK:         graph.concat({{.*}}) {axis = 2 : i64} {{.*}} -> tensor<1x32x8x8xf32>
// CHECK:         graph.concat({{.*}}) {axis = 2 : i64} {{.*}} -> tensor<1x32x8x8xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64} {{.*}} -> tensor<1x64x8x8xf32>
func.func @conv_rows_and_channels(%x: tensor<1x4x8x8xf32>) -> tensor<1x64x8x8xf32> {
  %w = graph.constant dense<0.5> : tensor<64x4x3x3xf32>
  %y = graph.conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<64x4x3x3xf32>) -> tensor<1x64x8x8xf32>
  func.return %y : tensor<1x64x8x8xf32>
}

// -----

// Depthwise (group = channels), dilation 2 (dk = 5), pads 2: one channel alone is
// 18 KiB, so rows: 5 pieces (10, 10, 10, 9, 9 rows), each reading its rows plus a
// 4-row halo; the weights and the group count stay whole.
// CHECK-LABEL: func.func @depthwise_rows
// CHECK:         graph.conv(%{{.*}}, %w) {group = 2 : i64, pads = array<i64: 2, 2, 0, 2>, dilations = array<i64: 2, 2>} : (tensor<1x2x12x48xf32>, {{.*}} -> tensor<1x2x10x48xf32>
// CHECK:         graph.conv(%{{.*}}, %w) {group = 2 : i64, pads = array<i64: 0, 2, 0, 2>, dilations = array<i64: 2, 2>} : (tensor<1x2x14x48xf32>, {{.*}} -> tensor<1x2x10x48xf32>
// CHECK:         graph.conv(%{{.*}}, %w) {group = 2 : i64, pads = array<i64: 0, 2, 2, 2>, dilations = array<i64: 2, 2>} : (tensor<1x2x11x48xf32>, {{.*}} -> tensor<1x2x9x48xf32>
// CHECK-NEXT:    graph.concat({{.*}}) {axis = 2 : i64} {{.*}} -> tensor<1x2x48x48xf32>
func.func @depthwise_rows(%x: tensor<1x2x48x48xf32>) -> tensor<1x2x48x48xf32> {
  %w = graph.constant dense<0.5> : tensor<2x1x3x3xf32>
  %y = graph.conv(%x, %w) {group = 2 : i64, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>} : (tensor<1x2x48x48xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x48x48xf32>
  func.return %y : tensor<1x2x48x48xf32>
}

// -----

// MaxPool 3x3/2 with ceil_mode on 64 rows: 32 output rows, the last window reads rows
// 62, 63 and one row past the input. One channel alone is 20 KiB, so rows (7, 7, 6,
// 6, 6); the last piece writes the overhang row as a bottom pad (-inf either way),
// so it holds whole windows. Without spatial the channels are cut (OFF).
// CHECK-LABEL: func.func @maxpool_ceil
// CHECK:         graph.max_pool({{.*}}) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x15x64xf32>) -> tensor<1x2x7x32xf32>
// CHECK:         graph.max_pool({{.*}}) {{{.*}}pads = array<i64: 0, 0, 1, 0>} : (tensor<1x2x12x64xf32>) -> tensor<1x2x6x32xf32>
// CHECK-NEXT:    graph.concat({{.*}}) {axis = 2 : i64} {{.*}} -> tensor<1x2x32x32xf32>
// OFF-LABEL:   func.func @maxpool_ceil
// OFF:           graph.concat({{.*}}) {axis = 1 : i64}
func.func @maxpool_ceil(%x: tensor<1x2x64x64xf32>) -> tensor<1x2x32x32xf32> {
  %y = graph.max_pool(%x) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x2x64x64xf32>) -> tensor<1x2x32x32xf32>
  func.return %y : tensor<1x2x32x32xf32>
}

// -----

// AveragePool 3x3/2, pads 1, ceil_mode, count_include_pad: 33 output rows; the last
// window reads input row 63, the explicit bottom pad (counted) and one overhang row
// (not counted). The first piece keeps the top pad, the last the bottom pad, and
// with ceil_mode the same overhang, so every window divides by the same count.
// CHECK-LABEL: func.func @avgpool_include_pad
// CHECK:         graph.average_pool({{.*}}) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 1>, ceil_mode = 1 : i64, count_include_pad = 1 : i64} : (tensor<1x2x14x64xf32>) -> tensor<1x2x7x33xf32>
// CHECK:         graph.average_pool({{.*}}) {{{.*}}pads = array<i64: 0, 1, 0, 1>{{.*}}} : (tensor<1x2x15x64xf32>) -> tensor<1x2x7x33xf32>
// CHECK:         graph.average_pool({{.*}}) {{{.*}}pads = array<i64: 0, 1, 1, 1>{{.*}}} : (tensor<1x2x11x64xf32>) -> tensor<1x2x6x33xf32>
// CHECK-NEXT:    graph.concat({{.*}}) {axis = 2 : i64} {{.*}} -> tensor<1x2x33x33xf32>
func.func @avgpool_include_pad(%x: tensor<1x2x64x64xf32>) -> tensor<1x2x33x33xf32> {
  %y = graph.average_pool(%x) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 1 : i64, count_include_pad = 1 : i64} : (tensor<1x2x64x64xf32>) -> tensor<1x2x33x33xf32>
  func.return %y : tensor<1x2x33x33xf32>
}

// -----

// graph-fuse's fused ops: Gelu is elementwise (any axis); LayerNormalization over
// the last axis splits the axes before it by cost (here the channels), gamma and
// beta whole. (graph-fuse makes no fused Conv: a Conv and its activation stay two
// ops, the activation split as an elementwise op.)
// CHECK-LABEL: func.func @layer_norm
// CHECK:         graph.layer_normalization(%{{.*}}, %g, %b) {{.*}} : (tensor<1x2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<1x2x16x32xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64} {{.*}} -> tensor<1x8x16x32xf32>
func.func @layer_norm(%x: tensor<1x8x16x32xf32>) -> tensor<1x8x16x32xf32> {
  %g = graph.constant dense<1.5> : tensor<32xf32>
  %b = graph.constant dense<0.5> : tensor<32xf32>
  %y = graph.layer_normalization(%x, %g, %b) {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<1x8x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<1x8x16x32xf32>
  func.return %y : tensor<1x8x16x32xf32>
}

// -----

// 32 output channels are one product block, and the 18 KiB of weights are in every
// row piece: no cut at the exact granules fits. With spatial=true the channels then
// cut one at a time (as exact as the row pieces: up to summation order): 3 pieces
// of 11, 11, 10 channels, the input whole.
// CHECK-LABEL: func.func @conv_fine_channels
// CHECK-NOT:     graph.slice
// CHECK:         graph.conv(%x, %{{.*}}) {{.*}} : (tensor<1x16x4x4xf32>, tensor<11x16x3x3xf32>) -> tensor<1x11x4x4xf32>
// CHECK:         graph.conv(%x, %{{.*}}) {{.*}} -> tensor<1x11x4x4xf32>
// CHECK:         graph.conv(%x, %{{.*}}) {{.*}} -> tensor<1x10x4x4xf32>
// CHECK-NEXT:    graph.concat({{.*}}) {axis = 1 : i64}
// OFF-LABEL:   func.func @conv_fine_channels
// OFF-NEXT:      graph.constant
// OFF-NEXT:      graph.conv(%x, %w)
// OFF-NEXT:      func.return
func.func @conv_fine_channels(%x: tensor<1x16x4x4xf32>) -> tensor<1x32x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<32x16x3x3xf32>
  %y = graph.conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x4x4xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x4x4xf32>
  func.return %y : tensor<1x32x4x4xf32>
}

// -----

// Clip (MobileNetV2's ReLU6) is elementwise with scalar bounds: split like any
// elementwise op (the cheapest axis; the bounds whole), with or without spatial.
// CHECK-LABEL: func.func @clip
// CHECK:         graph.clip(%{{.*}}, %lo, %hi) : (tensor<1x4x16x16xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x16x16xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64} {{.*}} -> tensor<1x16x16x16xf32>
// OFF-LABEL:   func.func @clip
// OFF:           graph.clip(%{{.*}}, %lo, %hi) : (tensor<1x4x16x16xf32>
func.func @clip(%x: tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> {
  %lo = graph.constant dense<0.0> : tensor<f32>
  %hi = graph.constant dense<6.0> : tensor<f32>
  %y = graph.clip(%x, %lo, %hi) : (tensor<1x16x16x16xf32>, tensor<f32>, tensor<f32>) -> tensor<1x16x16x16xf32>
  func.return %y : tensor<1x16x16x16xf32>
}
