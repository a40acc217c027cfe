// RUN: nnx-opt %s -p 'lower-to-chip{keep-faster=false}' | FileCheck %s
// RUN: nnx-opt %s -p 'lower-to-chip{schedule=false}' | FileCheck %s --check-prefix=PLAIN
// RUN: nnx-opt %s -p lower-to-chip | FileCheck %s --check-prefix=PLAIN

// (keep-faster=false: the scheduled program itself. On this tiny graph the
// unscheduled program is the faster one, so the default lower-to-chip keeps it:
// the third RUN line.)

// Attention scores plus a mask that the export computes after the scores: the mask's
// ops are hoisted above the batched MatMul, whose accumulators start from the mask
// (MatMul's optional C, broadcast over the heads): no VPU Add over the scores.
// CHECK:     chip.vpu Where VPU0 #chip.tile<O:[[M:0x[0-9a-f]+]], 1x1x8x8xf32>
// CHECK:     chip.mpu MatMul MPU0 #chip.tile<O:{{.*}}, 1x2x8x8xf32> <- #chip.tile<{{.*}}, 1x2x8x4xf32>, #chip.tile<{{.*}}, 1x2x4x8xf32>, #chip.tile<O:[[M]], 1x1x8x8xf32>
// CHECK-NOT: chip.vpu Add
// CHECK:     chip.vpu Softmax
// PLAIN:     chip.mpu MatMul
// PLAIN:     chip.vpu Add
func.func @main(%q: tensor<1x2x8x4xf32> {nnx.name = "q"}, %k: tensor<1x2x4x8xf32> {nnx.name = "k"}, %m: tensor<1x1x8x8xi1> {nnx.name = "m"}) -> (tensor<1x2x8x8xf32> {nnx.name = "p"}) {
  %s = graph.matmul(%q, %k) : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %z = graph.constant dense<0.0> : tensor<1xf32>
  %n = graph.constant dense<-1.0e4> : tensor<1xf32>
  %mask = graph.where(%m, %z, %n) : (tensor<1x1x8x8xi1>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x8x8xf32>
  %a = graph.add(%s, %mask) : (tensor<1x2x8x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = graph.softmax(%a) {axis = -1 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  func.return %p : tensor<1x2x8x8xf32>
}
