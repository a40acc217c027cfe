// swap-insert{policy=nnx}: the plan from the simulated schedule. The tensors %a,
// %b and %c (256 KiB each) wait idle while the chain %d..%f runs; the budget asks
// for about two of them less. The plan reduces the tensors idle at the peak, right
// after their producers, and without the original method's edges: no reduction ->
// next-reader serialization edge, no chain between restorations. Default target.

// RUN: nnx-opt %s -p 'swap-insert{policy=nnx memory-budget=1300000 mode=auto}' | FileCheck %s --check-prefix=AUTO
// RUN: nnx-opt %s -p 'swap-insert{policy=nnx memory-budget=1400000 mode=compress dtype=i8}' | FileCheck %s --check-prefix=COMP
// RUN: nnx-opt %s -p 'swap-insert{policy=nnx memory-budget=2000000 mode=auto}' | FileCheck %s --check-prefix=FITS

// mode=auto chose "both" for %a (idle the longest: compressed, then its small copy
// goes to the host, prefetched after %g) and compression alone for %b; the readers
// right after the producers carry no control edge.
// AUTO-LABEL: func.func @f
// AUTO:       %a = graph.relu(%x)
// AUTO-NEXT:  %[[Q:.*]] = graph.compress_tensor(%a) {dtype = "f16"}
// AUTO-NEXT:  %[[H:.*]] = graph.swap_out(%[[Q]])
// AUTO-NEXT:  %b = graph.sigmoid(%a) :
// AUTO-NEXT:  %[[P:.*]] = graph.compress_tensor(%b) {dtype = "f16"}
// AUTO-NEXT:  %c = graph.tanh(%b) :
// AUTO:       %[[D:.*]] = graph.decompress_tensor(%[[P]]) :
// AUTO-NEXT:  %h = graph.add(%g, %[[D]])
// AUTO-NEXT:  %[[I:.*]] = graph.swap_in(%[[H]]) after(%g : tensor<256x256xf32>)
// AUTO-NEXT:  %[[E:.*]] = graph.decompress_tensor(%[[I]]) :
// AUTO-NEXT:  %y = graph.add(%h, %[[E]])

// mode=compress: one tensor compressed to i8 (with its scale) is enough for this
// budget; its decompression sits right before the reader, without a prefetch edge.
// COMP-LABEL: func.func @f
// COMP-COUNT-1: graph.compress_tensor
// COMP-NOT:   graph.compress_tensor
// COMP:       graph.decompress_tensor(%{{.*}}, %{{.*}}) : (tensor<256x256xi8>, tensor<f32>)
// COMP-NOT:   after(

// A budget above the no-swap peak (1572864 bytes) changes nothing.
// FITS-LABEL: func.func @f
// FITS-NOT:   graph.swap_out
// FITS-NOT:   graph.compress_tensor
func.func @f(%x: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %a = graph.relu(%x) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %b = graph.sigmoid(%a) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %c = graph.tanh(%b) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %d = graph.sigmoid(%c) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %e = graph.tanh(%d) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %f = graph.sigmoid(%e) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %g = graph.add(%f, %c) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %h = graph.add(%g, %b) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %y = graph.add(%h, %a) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  func.return %y : tensor<256x256xf32>
}
