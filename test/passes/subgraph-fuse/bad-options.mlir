// subgraph-fuse: an impossible window (min > max), an unknown strategy and an
// unknown objective each end in one line and exit 1.

// RUN: not nnx-opt %s -p 'subgraph-fuse{min-weights=10 max-weights=5}' 2>&1 | FileCheck %s --check-prefix=WIN
// RUN: not nnx-opt %s -p 'subgraph-fuse{strategy=random}' 2>&1 | FileCheck %s --check-prefix=STRAT
// RUN: not nnx-opt %s -p 'subgraph-fuse{strategy=optimal objective=energy}' 2>&1 | FileCheck %s --check-prefix=OBJ

// WIN: error: subgraph-fuse: impossible window for weights: min-weights=10 > max-weights=5
// WIN-NOT: Traceback
// STRAT: error: subgraph-fuse: unknown strategy 'random' (one of pairwise, greedy, bidirectional, optimal)
// STRAT-NOT: Traceback
// OBJ: error: subgraph-fuse: unknown objective 'energy' (one of programs, time)

func.func @main(%x: tensor<4xf32> {nnx.name = "x"}) -> (tensor<4xf32> {nnx.name = "y"}) {
  %y = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
