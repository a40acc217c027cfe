// subgraph-split with a target: a single matmul whose 64 MiB weight cannot fit the
// whole 4 x 4 test mesh even alone is an error naming it (one line, no traceback).
// An unknown further-split rule is one line too.

// With -o, no output file is left behind.

// RUN: rm -rf %t && mkdir -p %t
// RUN: not nnx-opt %s -p 'subgraph-split{target="%S/../lower-to-mesh/Inputs/mesh4x4.toml"}' -o %t/out.mlir 2>&1 | FileCheck %s
// RUN: %python -c "import os, sys; sys.exit(len(os.listdir('%t')))"
// RUN: not nnx-opt %s -p 'subgraph-split{rule=thirds}' 2>&1 | FileCheck %s --check-prefix=RULE

// CHECK: error: 'graph.matmul' op subgraph-split: op graph.matmul does not fit the whole mesh even alone: lower-to-mesh: the graph does not fit the mesh: {{[0-9]+}} cores needed, 16 available (op graph.matmul needs the most: {{[0-9]+}} cores for {{[0-9]+}} bytes of weights and activations, a core has 524288 bytes of memory){{$}}
// CHECK-NOT: {{.}}
// RULE: subgraph-split: unknown rule 'thirds' (one of halve, key-nodes)
// RULE-NOT: Traceback

func.func @main(%x: tensor<1x4096xf32> {nnx.name = "x"}) -> (tensor<1x4096xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<4096x4096xf32>
  %m = graph.matmul(%x, %w) : (tensor<1x4096xf32>, tensor<4096x4096xf32>) -> tensor<1x4096xf32>
  func.return %m : tensor<1x4096xf32>
}
