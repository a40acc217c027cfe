// subgraph-fuse: subgraph-split cuts this chain of three 256 KiB matmul layers at
// %h1 and %h2 (returned and used further); fusion joins neighbours while the fused
// subgraph compiles on the 4 x 4 test mesh (8 MiB) and its windows hold.

// RUN: nnx-opt %s -p 'subgraph-split' | FileCheck %s --check-prefix=SPLIT
// RUN: nnx-opt %s -p 'subgraph-split,subgraph-fuse{target="%S/../lower-to-mesh/Inputs/mesh4x4.toml" strategy=greedy}' | FileCheck %s --check-prefix=ONE
// RUN: nnx-opt %s -p 'subgraph-split,subgraph-fuse{target="%S/../lower-to-mesh/Inputs/mesh4x4.toml" strategy=optimal}' | FileCheck %s --check-prefix=ONE
// RUN: nnx-opt %s -p 'subgraph-split,subgraph-fuse{target="%S/../lower-to-mesh/Inputs/mesh4x4.toml" strategy=bidirectional}' | FileCheck %s --check-prefix=ONE
// RUN: nnx-opt %s -p 'subgraph-split,subgraph-fuse{target="%S/../lower-to-mesh/Inputs/mesh4x4.toml" strategy=pairwise}' | FileCheck %s --check-prefix=PAIR
// RUN: nnx-opt %s -p 'subgraph-split,subgraph-fuse{target="%S/../lower-to-mesh/Inputs/mesh4x4.toml" strategy=greedy max-weights=300000}' | FileCheck %s --check-prefix=SPLIT
// RUN: nnx-opt %s -p 'subgraph-split,subgraph-fuse{target="%S/../lower-to-mesh/Inputs/mesh4x4.toml" strategy=optimal max-weights=600000}' | FileCheck %s --check-prefix=OPT2

// The split alone: three subgraphs, each ending at a target node.
// SPLIT:     %[[H1:.*]] = graph.subgraph(%{{.*}} = %x)
// SPLIT:       graph.relu
// SPLIT-NEXT:  graph.yield
// SPLIT:     %[[H2:.*]] = graph.subgraph(%{{.*}} = %[[H1]])
// SPLIT:       graph.relu
// SPLIT-NEXT:  graph.yield
// SPLIT:     graph.subgraph(%{{.*}} = %[[H2]], %{{.*}} = %x)
// SPLIT:       graph.add
// SPLIT-NOT: graph.subgraph

// Everything fits one program (768 KiB of weights on 8 MiB): greedy, optimal and
// bidirectional all fuse the chain into one subgraph with all three outputs.
// ONE:      %{{.*}}, %{{.*}}, %{{.*}} = graph.subgraph(%{{.*}} = %x)
// ONE-COUNT-3: graph.matmul
// ONE-NOT:  graph.subgraph

// Pairwise fuses the first pair and leaves the third alone.
// PAIR:      graph.subgraph(%{{.*}} = %x)
// PAIR-COUNT-2: graph.matmul
// PAIR:      graph.yield
// PAIR:      graph.subgraph
// PAIR-COUNT-1: graph.matmul
// PAIR-NOT:  graph.subgraph

// A 600 KB weight window lets optimal fuse only two of the three 256 KiB layers: two
// programs (the first of the programs found with the fewest, here layer 1 | 2+3).
// OPT2:      graph.subgraph(%{{.*}} = %x)
// OPT2-COUNT-1: graph.matmul
// OPT2:      graph.yield
// OPT2:      graph.subgraph
// OPT2-COUNT-2: graph.matmul
// OPT2:      graph.yield
// OPT2-NOT:  graph.subgraph

func.func @main(%x: tensor<1x256xf32> {nnx.name = "x"}) -> (tensor<1x256xf32> {nnx.name = "h1"}, tensor<1x256xf32> {nnx.name = "h2"}, tensor<1x256xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<256x256xf32>
  %m = graph.matmul(%x, %w) : (tensor<1x256xf32>, tensor<256x256xf32>) -> tensor<1x256xf32>
  %h1 = graph.relu(%m) : (tensor<1x256xf32>) -> tensor<1x256xf32>
  %m2 = graph.matmul(%h1, %w) : (tensor<1x256xf32>, tensor<256x256xf32>) -> tensor<1x256xf32>
  %h2 = graph.relu(%m2) : (tensor<1x256xf32>) -> tensor<1x256xf32>
  %m3 = graph.matmul(%h2, %w) : (tensor<1x256xf32>, tensor<256x256xf32>) -> tensor<1x256xf32>
  %y = graph.add(%m3, %x) : (tensor<1x256xf32>, tensor<1x256xf32>) -> tensor<1x256xf32>
  func.return %h1, %h2, %y : tensor<1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>
}
