// topo-reorder on small graphs: HEFT's list order, chains left alone, the report
// and the DOT view. cost=estimate (no compilation) keeps these cases fast.

// RUN: nnx-opt %s -p 'topo-reorder{search=heft cost=estimate verify=false}' | FileCheck %s
// RUN: nnx-opt %s -p 'topo-reorder{cost=estimate report="%t.json" dot="%t.dot"}' -o %t.mlir
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: FileCheck %s --check-prefix=DOT < %t.dot

// Two branches from %x join at the add. The ONNX order runs the cheap relu branch
// first; HEFT starts the branch with the longest remaining path (the conv on the
// MPU) first. The add, on every path, is a key node; relu fits in 3 places.
// CHECK-LABEL: func.func @main
// CHECK:         graph.conv
// CHECK:         graph.relu
// CHECK:         graph.add
// CHECK:         func.return
// REPORT:        "key_nodes"
// REPORT:        "Add
// REPORT:        "subgraphs"
// REPORT:        "topological_orders": "3"
// REPORT:        "search_seconds"
// DOT:           digraph topo
// DOT:           subgraph cluster_0
// DOT:           fillcolor
// DOT:           -> n
func.func @main(%x: tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
  %w = graph.constant dense<0.5> : tensor<16x16x3x3xf32>
  %r = graph.relu(%x) : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
  %c = graph.conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
  %s = graph.sigmoid(%c) : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
  %a = graph.add(%r, %s) : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
  func.return %a : tensor<1x16x32x32xf32>
}
