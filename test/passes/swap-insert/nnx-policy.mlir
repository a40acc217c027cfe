// swap-insert{policy=nnx}: the plan from the simulated schedule. The tensors %a,
// %b and %c (256 KiB each) wait idle while the chain %d..%f runs; the budget asks
// for about two of them less. The plan reduces the tensors idle at the peak, right
// after their producers, and without the original method's edges: no reduction ->
// next-reader serialization edge, no chain between restorations. Default target.

// @f has no backward pass (no `loss` result): every reader is a forward reader, so
// the default plan may only swap (exact); no swap fits its idle window, so without
// stalls nothing fits, and with them (the default) the plan's swaps are waited for;
// `exact-forward=false` lets a compressed copy feed them, as the planner did before.
// RUN: not nnx-opt %s -p 'swap-insert{memory-budget=1300000 stall=false}' 2>&1 | FileCheck %s --check-prefix=EXACT
// RUN: nnx-opt %s -p 'swap-insert{memory-budget=1300000}' | FileCheck %s --check-prefix=STALL
// RUN: nnx-opt %s -p 'swap-insert{memory-budget=1300000 exact-forward=false}' | FileCheck %s --check-prefix=DEFAULT
// RUN: nnx-opt %s -p 'swap-insert{policy=nnx memory-budget=1300000 mode=auto dtype=auto exact-forward=false}' | FileCheck %s --check-prefix=DEFAULT
// RUN: nnx-opt %s -p 'swap-insert{policy=nnx memory-budget=1300000 mode=auto dtype=f16 exact-forward=false}' | FileCheck %s --check-prefix=AUTO
// RUN: nnx-opt %s -p 'swap-insert{policy=nnx memory-budget=1400000 mode=compress dtype=i8 exact-forward=false scales=tensor}' | FileCheck %s --check-prefix=COMP
// RUN: nnx-opt %s -p 'swap-insert{memory-budget=2000000}' | FileCheck %s --check-prefix=FITS
// RUN: nnx-opt %s -p 'swap-insert{memory-budget=1400000 policy=seed}' | FileCheck %s --check-prefix=SEED
// RUN: nnx-opt %s -p 'swap-insert{memory-budget=1400000 policy=seed mode=compress}' | FileCheck %s --check-prefix=SEED-COMP
// RUN: not nnx-opt %s -p 'swap-insert{memory-budget=1300000 policy=seed mode=compress}' 2>&1 | FileCheck %s --check-prefix=SEED-FAILS

// EXACT: error: 'func.func' op swap-insert: no plan fits memory-budget=1300000 in @f with policy=nnx mode=auto dtype=auto

// With stalls (docs/tensor-timing-and-swapping.md, "Plans that stall"): %a and %b go
// to the host whole (exact), and each comes back only after the op before its
// reader (the synchronous plan's restoration; the reader waits for the link). The
// edges that made the ops after the producers wait for the copies were dropped:
// the plan fits without them.
// STALL-LABEL: func.func @f
// STALL:       %a = graph.relu(%x)
// STALL-NEXT:  %[[HA:.*]] = graph.swap_out(%a) :
// STALL-NEXT:  %b = graph.sigmoid(%a) :
// STALL-NEXT:  %[[HB:.*]] = graph.swap_out(%b) :
// STALL-NEXT:  %c = graph.tanh(%b) :
// STALL:       %g = graph.add(%f, %c) :
// STALL-NEXT:  %[[IB:.*]] = graph.swap_in(%[[HB]]) after(%g : tensor<256x256xf32>)
// STALL-NEXT:  %h = graph.add(%g, %[[IB]]) :
// STALL-NEXT:  %[[IA:.*]] = graph.swap_in(%[[HA]]) after(%h : tensor<256x256xf32>)
// STALL-NEXT:  %y = graph.add(%h, %[[IA]]) :

// With a memory budget, swap-insert is the planner with mode=auto and dtype=auto
// (the same as spelling the three out, third RUN line): the fastest plan of the f16
// and i8 ones. Here that is i8 (one scale per channel, the default) with "both" for
// %a and %b (compressed, the small copies to the host), each prefetched by one op
// before its reader, and no control edge on the model's own ops.
// DEFAULT-LABEL: func.func @f
// DEFAULT:       %a = graph.relu(%x)
// DEFAULT-NEXT:  %[[QA:.*]], %[[SA:.*]] = graph.compress_tensor(%a) {dtype = "i8", scales = "channel"} : (tensor<256x256xf32>) -> (tensor<256x256xi8>, tensor<256xf32>)
// DEFAULT-NEXT:  %[[HA:.*]] = graph.swap_out(%[[QA]])
// DEFAULT-NEXT:  %b = graph.sigmoid(%a) :
// DEFAULT-NEXT:  %[[QB:.*]], %[[SB:.*]] = graph.compress_tensor(%b) {dtype = "i8", scales = "channel"}
// DEFAULT-NEXT:  %[[HB:.*]] = graph.swap_out(%[[QB]])
// DEFAULT-NEXT:  %c = graph.tanh(%b) :
// DEFAULT:       %g = graph.add(%f, %c) :
// DEFAULT-NEXT:  %[[IB:.*]] = graph.swap_in(%[[HB]]) after(%f : tensor<256x256xf32>)
// DEFAULT-NEXT:  %[[DB:.*]] = graph.decompress_tensor(%[[IB]], %[[SB]]) {scales = "channel"}
// DEFAULT-NEXT:  %h = graph.add(%g, %[[DB]]) :
// DEFAULT-NEXT:  %[[IA:.*]] = graph.swap_in(%[[HA]]) after(%g : tensor<256x256xf32>)
// DEFAULT-NEXT:  %[[DA:.*]] = graph.decompress_tensor(%[[IA]], %[[SA]])
// DEFAULT-NEXT:  %y = graph.add(%h, %[[DA]]) :

// mode=auto with dtype=f16 given: the given dtype is kept. The plan chose "both" for
// %a (idle the longest: compressed, then its small copy goes to the host, prefetched
// after %g) and compression alone for %b; the readers right after the producers
// carry no control edge.
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

// mode=compress: one tensor compressed to i8 (with its one scale) is enough for this
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

// policy=seed stays selectable under a budget: the threshold search with its
// defaults mode=swap dtype=f16, and the original edges -- each restoration chained
// after the previous one (%c's, then %b's, then %a's).
// SEED-LABEL: func.func @f
// SEED:       %[[HA:.*]] = graph.swap_out(%a)
// SEED:       %[[HB:.*]] = graph.swap_out(%b)
// SEED:       %[[HC:.*]] = graph.swap_out(%c)
// SEED-NOT:   graph.compress_tensor
// SEED:       %[[RC:.*]] = graph.swap_in(%[[HC]]) after(%e : tensor<256x256xf32>)
// SEED:       %[[RB:.*]] = graph.swap_in(%[[HB]]) after(%f, %[[RC]] :
// SEED:       graph.swap_in(%[[HA]]) after(%g, %[[RB]] :

// policy=seed with mode=compress given: f16 compression of %a and %b, the
// decompressions chained.
// SEED-COMP-LABEL: func.func @f
// SEED-COMP:       %[[CA:.*]] = graph.compress_tensor(%a) {dtype = "f16"}
// SEED-COMP:       %[[CB:.*]] = graph.compress_tensor(%b) {dtype = "f16"}
// SEED-COMP-NOT:   graph.swap_out
// SEED-COMP:       %[[DB:.*]] = graph.decompress_tensor(%[[CB]]) after(%f : tensor<256x256xf32>)
// SEED-COMP:       graph.decompress_tensor(%[[CA]]) after(%g, %[[DB]] :

// At 1300000 bytes the threshold search finds no setting (f16 frees half of each
// tensor, and its swaps serialize), where the default plan above fits.
// SEED-FAILS: error: 'func.func' op swap-insert: no setting fits memory-budget=1300000 in @f with policy=seed mode=compress dtype=f16 (no-swap peak 1572864 bytes, lowest peak found 1310720 bytes)
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
