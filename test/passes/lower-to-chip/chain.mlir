// RUN: nnx-opt %s -p lower-to-chip | FileCheck %s
// RUN: nnx-opt %s -p 'lower-to-chip{chain=false}' | FileCheck %s --check-prefix=PEROP

// On-chip chaining: the matmul's result stays in the output cache, the softmax reads
// it there and writes its own result into the output cache, the second matmul reads
// that as its neuron operand; only the graph output is stored.
// CHECK:      chip.mpu MatMul MPU0 #chip.tile<O:[[A:0x[0-9a-f]+]], 4x8xf32> <- #chip.tile<N:0x0, 4x8xf32>, #chip.tile<W:{{0x[0-9a-f]+}}, 8x8xf32>
// CHECK:      chip.vpu Softmax VPU0 #chip.tile<O:[[B:0x[0-9a-f]+]], 4x8xf32> <- #chip.tile<O:[[A]], 4x8xf32>
// CHECK:      chip.mpu MatMul MPU0 #chip.tile<O:{{0x[0-9a-f]+}}, 4x8xf32> <- #chip.tile<O:[[B]], 4x8xf32>, #chip.tile<W:{{0x[0-9a-f]+}}, 8x8xf32>
// CHECK:      chip.store
// CHECK-NOT:  chip.store
// CHECK:      }

// The per-op path: every result goes to storage and comes back.
// PEROP-COUNT-3: chip.store
// PEROP-NOT:     chip.store
func.func @main(%x: tensor<4x8xf32> {nnx.name = "x"}) -> (tensor<4x8xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<8x8xf32>
  %a = graph.matmul(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = graph.softmax(%a) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = graph.matmul(%s, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
