// subgraph-split: target nodes and an already split function.

// Splitting an already split function cuts it afresh: the same chain as one split.
// RUN: nnx-opt %s -p subgraph-split,subgraph-split | FileCheck %s --check-prefix=TWICE
// TWICE-LABEL: func.func @main
// TWICE:         %[[H:.*]] = graph.subgraph(%{{.*}} = %x)
// TWICE-NEXT:      graph.neg
// TWICE-NEXT:      graph.yield
// TWICE-NEXT:    }
// TWICE-NEXT:    %[[Y:.*]] = graph.subgraph(%{{.*}} = %[[H]])
// TWICE-NEXT:      graph.exp
// TWICE-NEXT:      graph.yield
// TWICE-NEXT:    }
// TWICE-NEXT:    func.return %[[H]], %[[Y]]
// TWICE-NOT:     graph.subgraph
func.func @main(%x: tensor<4xf32> {nnx.name = "x"}) -> (tensor<4xf32> {nnx.name = "h"}, tensor<4xf32> {nnx.name = "y"}) {
  %h = graph.neg(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %y = graph.exp(%h) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %h, %y : tensor<4xf32>, tensor<4xf32>
}
