// subgraph-split: the function becomes a chain of graph.subgraph ops cut right after
// each target node (an op whose result is a graph output and also feeds later ops).

// RUN: nnx-opt %s -p subgraph-split --split-input-file | FileCheck %s
// RUN: nnx-opt %s -p subgraph-split --split-input-file --mlir-print-op-generic | nnx-opt --split-input-file | FileCheck %s

// %h is returned and feeds the second matmul: the relu is a target node, so the
// chain is two subgraphs; each gets its own clone of the shared weight, the second
// takes %h (parked in host memory) and %x as explicit inputs.
// CHECK-LABEL: func.func @main
// CHECK:         %[[H:.*]] = graph.subgraph(%[[A:.*]] = %x) : (tensor<1x8xf32>) -> (tensor<1x8xf32>) {
// CHECK-NEXT:      graph.constant
// CHECK-NEXT:      graph.matmul(%[[A]],
// CHECK-NEXT:      %[[R:.*]] = graph.relu
// CHECK-NEXT:      graph.yield %[[R]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[Y:.*]] = graph.subgraph(%{{.*}} = %[[H]], %{{.*}} = %x)
// CHECK-NEXT:      graph.constant
// CHECK-NEXT:      graph.matmul
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[H]], %[[Y]]
func.func @main(%x: tensor<1x8xf32> {nnx.name = "x"}) -> (tensor<1x8xf32> {nnx.name = "h1"}, tensor<1x8xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<8x8xf32>
  %m = graph.matmul(%x, %w) : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
  %h = graph.relu(%m) : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %m2 = graph.matmul(%h, %w) : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
  %y = graph.add(%m2, %x) : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %h, %y : tensor<1x8xf32>, tensor<1x8xf32>
}

// -----

// No target node: outputs that feed nothing else (%a, %b) do not cut; the whole
// function is one subgraph.
// CHECK-LABEL: func.func @main
// CHECK:         %[[A:.*]], %[[B:.*]] = graph.subgraph(%{{.*}} = %x)
// CHECK-NEXT:      graph.relu
// CHECK-NEXT:      graph.sigmoid
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[A]], %[[B]]
// CHECK-NOT:     graph.subgraph
func.func @main(%x: tensor<4xf32> {nnx.name = "x"}) -> (tensor<4xf32> {nnx.name = "a"}, tensor<4xf32> {nnx.name = "b"}) {
  %a = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = graph.sigmoid(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Two target nodes (%h1 and %h2, each returned and used further) give three
// subgraphs; the last one reads both parked values.
// CHECK-LABEL: func.func @main
// CHECK:         %[[H1:.*]] = graph.subgraph(%{{.*}} = %x)
// CHECK:           graph.tanh
// CHECK:         %[[H2:.*]] = graph.subgraph(%{{.*}} = %[[H1]])
// CHECK:           graph.relu
// CHECK:         %[[Y:.*]] = graph.subgraph(%{{.*}} = %[[H2]], %{{.*}} = %[[H1]])
// CHECK:           graph.add
// CHECK:         func.return %[[H1]], %[[H2]], %[[Y]]
func.func @main(%x: tensor<4xf32> {nnx.name = "x"}) -> (tensor<4xf32> {nnx.name = "h1"}, tensor<4xf32> {nnx.name = "h2"}, tensor<4xf32> {nnx.name = "y"}) {
  %h1 = graph.tanh(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %h2 = graph.relu(%h1) : (tensor<4xf32>) -> tensor<4xf32>
  %y = graph.add(%h2, %h1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %h1, %h2, %y : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

