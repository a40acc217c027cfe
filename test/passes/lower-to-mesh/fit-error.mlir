// lower-to-mesh: a matmul whose 64 MiB weight needs more cores than the 4 x 4 test
// mesh has fails with one line naming the cores needed and available and the op.

// RUN: not nnx-opt %s -p 'lower-to-mesh{target="%S/Inputs/mesh4x4.toml"}' 2>&1 | FileCheck %s

// CHECK: fit-error.mlir:11:3: error: 'graph.matmul' op lower-to-mesh: the graph does not fit the mesh: {{[0-9]+}} cores needed, 16 available (op graph.matmul needs the most: {{[0-9]+}} cores for {{[0-9]+}} bytes of weights and activations, a core has 524288 bytes of memory)
// CHECK-NOT: Traceback

func.func @main(%x: tensor<1x4096xf32> {nnx.name = "x"}) -> (tensor<1x4096xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<4096x4096xf32>
  %m = graph.matmul(%x, %w) : (tensor<1x4096xf32>, tensor<4096x4096xf32>) -> tensor<1x4096xf32>
  func.return %m : tensor<1x4096xf32>
}
