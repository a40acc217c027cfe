// A chain has one topological order: topo-reorder (default options, measuring
// nothing because there is nothing to choose) leaves the block exactly as it was.

// RUN: nnx-opt %s -p topo-reorder | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    graph.constant
// CHECK-NEXT:    graph.conv
// CHECK-NEXT:    graph.relu
// CHECK-NEXT:    graph.constant
// CHECK-NEXT:    graph.conv
// CHECK-NEXT:    graph.relu
// CHECK-NEXT:    func.return
func.func @main(%x: tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> {
  %w1 = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %c1 = graph.conv(%x, %w1) : (tensor<1x8x16x16xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x16x16xf32>
  %r1 = graph.relu(%c1) : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  %w2 = graph.constant dense<0.25> : tensor<8x8x1x1xf32>
  %c2 = graph.conv(%r1, %w2) : (tensor<1x8x16x16xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x16x16xf32>
  %r2 = graph.relu(%c2) : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  func.return %r2 : tensor<1x8x16x16xf32>
}
