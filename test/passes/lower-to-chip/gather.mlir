// RUN: nnx-opt %s -p lower-to-chip | FileCheck %s
// RUN: nnx-opt %s -p lower-to-chip | nnx-opt | FileCheck %s
// RUN: nnx-opt %s -p 'lower-to-chip{chain=false}' | FileCheck %s --check-prefix=PEROP

// An embedding lookup: Gather along axis 0 of a constant table by runtime ids is
// indirect DMA (GATHER) of the named rows -- the 1000-row table is never LOADed; the
// ids are LOADed into the neuron cache, the rows land in the output cache where the
// Add reads them (chained) or (chain=false) are STOREd first.
// CHECK:      chip.const @table #chip.tile<S:0x0, 1000x16xf32>
// CHECK-NOT:  chip.load {{.*}}1000x16xf32
// CHECK:      chip.load DAU0 #chip.tile<N:[[I:0x[0-9a-f]+]], 6xi64> <- #chip.tile<S:{{.*}}, 6xi64>
// CHECK-NEXT: chip.gather DAU0 #chip.tile<O:[[O:0x[0-9a-f]+]], 6x16xf32> <- #chip.tile<S:0x0, 1000x16xf32>, #chip.tile<N:[[I]], 6xi64>
// CHECK:      chip.vpu Add VPU0 {{.*}} <- #chip.tile<O:[[O]], 2x3x16xf32>
// PEROP:      chip.gather DAU0 #chip.tile<O:[[O:0x[0-9a-f]+]], 6x16xf32> <- #chip.tile<S:0x0, 1000x16xf32>
// PEROP:      chip.store DAU0 #chip.tile<S:{{.*}}, 6x16xf32> <- #chip.tile<O:[[O]], 6x16xf32>
func.func @main(%ids: tensor<2x3xi64> {nnx.name = "ids"}) -> (tensor<2x3x16xf32> {nnx.name = "y"}) {
  %t = graph.constant dense<0.5> : tensor<1000x16xf32> loc("table")
  %e = graph.gather(%t, %ids) {axis = 0 : i64} : (tensor<1000x16xf32>, tensor<2x3xi64>) -> tensor<2x3x16xf32>
  %y = graph.add(%e, %e) : (tensor<2x3x16xf32>, tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
  func.return %y : tensor<2x3x16xf32>
}
