// op-split on elementwise ops: any axis but a reduced one, the cheapest by the
// target's cycle formulas (ties: the outer axis); broadcast operands stay whole.

// RUN: nnx-opt %s -split-input-file -p 'op-split{threshold=20000}' | FileCheck %s
// RUN: not nnx-opt %s -split-input-file -p 'op-split{threshold=-1}' 2>&1 | FileCheck %s --check-prefix=ERR
// ERR: op-split: threshold=-1: must be 0 (from the target) or positive

// Add with a per-channel bias (broadcast 16x1x1): the outer axis that splits
// evenly is the channel axis; the bias is sliced with it.
// CHECK-LABEL: func.func @add_bias
// CHECK:         %[[X:.*]] = graph.slice(%x, {{.*}} -> tensor<1x{{[0-9]+}}x16x16xf32>
// CHECK:         graph.add(%[[X]], %{{.*}})
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64}
func.func @add_bias(%x: tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> {
  %b = graph.constant dense<0.5> : tensor<16x1x1xf32>
  %y = graph.add(%x, %b) : (tensor<1x16x16x16xf32>, tensor<16x1x1xf32>) -> tensor<1x16x16x16xf32>
  func.return %y : tensor<1x16x16x16xf32>
}

// -----

// Softmax over the last axis: never split there (a reduction); the rows split.
// CHECK-LABEL: func.func @softmax
// CHECK:         graph.slice(%x, {{.*}} -> tensor<{{[0-9]+}}x512xf32>
// CHECK:         graph.softmax({{.*}}) {axis = -1 : i64} : (tensor<{{[0-9]+}}x512xf32>)
// CHECK:         graph.concat({{.*}}) {axis = 0 : i64}
func.func @softmax(%x: tensor<32x512xf32>) -> tensor<32x512xf32> {
  %y = graph.softmax(%x) {axis = -1 : i64} : (tensor<32x512xf32>) -> tensor<32x512xf32>
  func.return %y : tensor<32x512xf32>
}

// -----

// Ops without a split rule (here Flatten, which changes the shape) are left alone.
// CHECK-LABEL: func.func @flatten
// CHECK-NEXT:    graph.flatten
// CHECK-NEXT:    func.return
func.func @flatten(%x: tensor<4x16x16x16xf32>) -> tensor<4x4096xf32> {
  %y = graph.flatten(%x) : (tensor<4x16x16x16xf32>) -> tensor<4x4096xf32>
  func.return %y : tensor<4x4096xf32>
}

// -----

// LRN sums over channels: never the channel axis (here H, 8 pieces of 4 rows).
// CHECK-LABEL: func.func @lrn
// CHECK-NOT:     tensor<1x8x32x32xf32>
// CHECK:         graph.lrn({{.*}}) {size = 5 : i64} : (tensor<1x16x4x32xf32>) -> tensor<1x16x4x32xf32>
// CHECK:         graph.concat({{.*}}) {axis = 2 : i64}
func.func @lrn(%x: tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
  %y = graph.lrn(%x) {size = 5 : i64} : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
  func.return %y : tensor<1x16x32x32xf32>
}

// -----

// A unary op: the outer (batch) axis, one image (16 KB in and out) per piece.
// CHECK-LABEL: func.func @relu
// CHECK-COUNT-4: graph.relu({{.*}}) : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
// CHECK:         graph.concat({{.*}}) {axis = 0 : i64} {{.*}} -> tensor<4x8x16x16xf32>
func.func @relu(%x: tensor<4x8x16x16xf32>) -> tensor<4x8x16x16xf32> {
  %y = graph.relu(%x) : (tensor<4x8x16x16xf32>) -> tensor<4x8x16x16xf32>
  func.return %y : tensor<4x8x16x16xf32>
}

// -----

// A variadic op (Sum of three, one broadcast along W): the full operands are sliced
// with the result, the broadcast one stays whole; a piece still too big is split
// again (batch, then channels).
// CHECK-LABEL: func.func @sum3
// CHECK:         %[[A:.*]] = graph.slice(%a, {{.*}} -> tensor<1x8x16x16xf32>
// CHECK:         %[[B:.*]] = graph.slice(%b, {{.*}} -> tensor<1x8x16x16xf32>
// CHECK:         graph.sum({{.*}}, %c) : (tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<16xf32>) -> tensor<1x4x16x16xf32>
// CHECK:         graph.concat({{.*}}) {axis = 0 : i64} {{.*}} -> tensor<2x8x16x16xf32>
func.func @sum3(%a: tensor<2x8x16x16xf32>, %b: tensor<2x8x16x16xf32>, %c: tensor<16xf32>) -> tensor<2x8x16x16xf32> {
  %y = graph.sum(%a, %b, %c) : (tensor<2x8x16x16xf32>, tensor<2x8x16x16xf32>, tensor<16xf32>) -> tensor<2x8x16x16xf32>
  func.return %y : tensor<2x8x16x16xf32>
}
