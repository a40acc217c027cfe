// swap-insert: a reduction after the producer of a tensor that waits long, a
// restoration before its distant consumer, and the control edges: serialization
// from the reduction into the producer's next consumer, prefetch into the
// restoration from an op upstream of the consumer. Default target; %a waits 2048
// cycles (asap timing) at the add.

// RUN: nnx-opt %s --split-input-file -p 'swap-insert{th-tts=1000}' | FileCheck %s --check-prefix=SWAP
// RUN: nnx-opt %s --split-input-file -p 'swap-insert{th-tts=1000 mode=compress dtype=bf16}' | FileCheck %s --check-prefix=COMP
// RUN: nnx-opt %s --split-input-file -p 'swap-insert{th-tts=1000 mode=both dtype=i8}' | FileCheck %s --check-prefix=BOTH
// RUN: nnx-opt %s --split-input-file -p 'swap-insert{th-tts=5000}' | FileCheck %s --check-prefix=NONE
// RUN: nnx-opt %s --split-input-file -p 'swap-insert{th-tts=1000 th-size=16384}' | FileCheck %s --check-prefix=NONE
// RUN: nnx-opt %s --split-input-file -p 'swap-insert{th-tts=1000}' --print-op-generic | nnx-opt | FileCheck %s --check-prefix=SWAP

// SWAP-LABEL: func.func @chain
// SWAP:       %a = graph.relu(%x)
// SWAP-NEXT:  %[[H:.*]] = graph.swap_out(%a) : (tensor<64x32xf32>) -> tensor<64x32xf32>
// SWAP-NEXT:  %b = graph.sigmoid(%a) after(%[[H]] : tensor<64x32xf32>)
// The restoration sits right before the consumer; its prefetch edge comes from %d,
// the op that finishes about one transfer time before the add needs %a.
// SWAP:       %e = graph.sigmoid(%d)
// SWAP-NEXT:  %[[R:.*]] = graph.swap_in(%[[H]]) after(%d : tensor<64x32xf32>)
// SWAP-NEXT:  %y = graph.add(%e, %[[R]])
// COMP-LABEL: func.func @chain
// COMP:       %[[C:.*]] = graph.compress_tensor(%a) {dtype = "bf16"} : (tensor<64x32xf32>) -> tensor<64x32xbf16>
// COMP-NEXT:  %b = graph.sigmoid(%a) after(%[[C]] : tensor<64x32xbf16>)
// COMP:       %[[D:.*]] = graph.decompress_tensor(%[[C]]) after(
// COMP:       %y = graph.add(%e, %[[D]])
// BOTH-LABEL: func.func @chain
// BOTH:       %[[Q:.*]], %[[S:.*]] = graph.compress_tensor(%a) {dtype = "i8"} : (tensor<64x32xf32>) -> (tensor<64x32xi8>, tensor<f32>)
// BOTH-NEXT:  %[[H:.*]] = graph.swap_out(%[[Q]]) : (tensor<64x32xi8>) -> tensor<64x32xi8>
// BOTH-NEXT:  %b = graph.sigmoid(%a) after(%[[H]] : tensor<64x32xi8>)
// BOTH:       %[[I:.*]] = graph.swap_in(%[[H]]) after(
// BOTH-NEXT:  %[[D:.*]] = graph.decompress_tensor(%[[I]], %[[S]]) : (tensor<64x32xi8>, tensor<f32>) -> tensor<64x32xf32>
// BOTH:       %y = graph.add(%e, %[[D]])
// NONE-LABEL: func.func @chain
// NONE-NOT:   graph.swap_out
// NONE-NOT:   graph.compress_tensor
func.func @chain(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %a = graph.relu(%x) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %b = graph.sigmoid(%a) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %c = graph.tanh(%b) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %d = graph.tanh(%c) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %e = graph.sigmoid(%d) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = graph.add(%e, %a) : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  func.return %y : tensor<64x32xf32>
}

// -----

// Two distant consumers far apart from each other: one reduction, two
// restorations, the second serialized after the first. Parameters (constants and
// arguments) are never candidates.
// SWAP-LABEL: func.func @two_groups
// SWAP:       %[[H:.*]] = graph.swap_out(%a)
// SWAP-NOT:   graph.swap_out
// SWAP:       %[[R1:.*]] = graph.swap_in(%[[H]]) after(
// SWAP:       %f = graph.add(%e, %[[R1]])
// SWAP-NOT:   graph.swap_out
// SWAP:       %[[R2:.*]] = graph.swap_in(%[[H]]) after(%i, %[[R1]] : tensor<64x32xf32>, tensor<64x32xf32>)
// SWAP:       %k = graph.add(%j, %[[R2]])
// SWAP-NOT:   graph.swap_out(%w)
func.func @two_groups(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %w = graph.constant dense<1.0> : tensor<64x32xf32>
  %a = graph.add(%x, %w) : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %b = graph.sigmoid(%a) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %c = graph.tanh(%b) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %d = graph.tanh(%c) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %e = graph.sigmoid(%d) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %f = graph.add(%e, %a) : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %g = graph.sigmoid(%f) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %h = graph.tanh(%g) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %i = graph.tanh(%h) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %j = graph.sigmoid(%i) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %k = graph.add(%j, %a) : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = graph.add(%k, %w) : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  func.return %y : tensor<64x32xf32>
}

// -----

// serialize=false: no edge from the reduction into the producer's next reader; the
// prefetch edge stays.
// RUN: nnx-opt %s --split-input-file -p 'swap-insert{th-tts=1000 serialize=false}' | FileCheck %s --check-prefix=NOSER
// NOSER-LABEL: func.func @no_serialization
// NOSER:       %[[H:.*]] = graph.swap_out(%a)
// NOSER-NEXT:  %b = graph.sigmoid(%a) : (tensor<64x32xf32>) -> tensor<64x32xf32>
// NOSER:       graph.swap_in(%[[H]]) after(%d : tensor<64x32xf32>)
func.func @no_serialization(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %a = graph.relu(%x) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %b = graph.sigmoid(%a) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %c = graph.tanh(%b) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %d = graph.tanh(%c) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %e = graph.sigmoid(%d) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = graph.add(%e, %a) : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  func.return %y : tensor<64x32xf32>
}
