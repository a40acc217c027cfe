// subgraph-fuse: an impossible window (min > max), an unknown strategy, an
// unknown objective and an unknown fit-check level (subgraph-split's too) each end
// in one line and exit 1.

// With -o, no output file is left behind (the directory stays empty).

// RUN: rm -rf %t && mkdir -p %t
// RUN: not nnx-opt %s -p 'subgraph-fuse{min-weights=10 max-weights=5}' -o %t/out.mlir 2>&1 | FileCheck %s --check-prefix=WIN
// RUN: not nnx-opt %s -p 'subgraph-fuse{strategy=random}' -o %t/out.mlir 2>&1 | FileCheck %s --check-prefix=STRAT
// RUN: %python -c "import os, sys; sys.exit(len(os.listdir('%t')))"
// RUN: not nnx-opt %s -p 'subgraph-fuse{strategy=optimal objective=energy}' 2>&1 | FileCheck %s --check-prefix=OBJ

// WIN: error: subgraph-fuse: impossible window for weights: min-weights=10 > max-weights=5
// WIN-EMPTY:
// WIN-NOT: {{.}}
// STRAT: error: subgraph-fuse: unknown strategy 'random' (one of pairwise, greedy, bidirectional, optimal)
// STRAT-EMPTY:
// STRAT-NOT: {{.}}
// RUN: not nnx-opt %s -p 'subgraph-fuse{fit-check=guess}' 2>&1 | FileCheck %s --check-prefix=FIT
// RUN: not nnx-opt %s -p 'subgraph-split{fit-check=guess}' 2>&1 | FileCheck %s --check-prefix=SPLIT

// OBJ: error: subgraph-fuse: unknown objective 'energy' (one of programs, time)
// FIT: error: subgraph-fuse: unknown fit-check 'guess' (one of plan, storage, compile)
// FIT-EMPTY:
// SPLIT: error: subgraph-split: unknown fit-check 'guess' (one of plan, storage, compile)
// SPLIT-EMPTY:

func.func @main(%x: tensor<4xf32> {nnx.name = "x"}) -> (tensor<4xf32> {nnx.name = "y"}) {
  %y = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
