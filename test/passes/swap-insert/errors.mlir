// swap-insert: bad options, and the verifier of the memory ops: a restoration
// needs its reduction, and control edges may not form a cycle (block order).

// RUN: not nnx-opt %s --split-input-file -p 'swap-insert{mode=zip}' 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not nnx-opt %s --split-input-file -p 'swap-insert{dtype=f8}' 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not nnx-opt %s --split-input-file -p 'swap-insert{memory-budget=1}' 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: not nnx-opt %s --split-input-file -p 'swap-insert{memory-budget=1 policy=seed}' 2>&1 | FileCheck %s --check-prefix=SEED-BUDGET
// RUN: not nnx-opt %s --split-input-file -p 'swap-insert{policy=best}' 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not nnx-opt %s --split-input-file -p 'swap-insert{policy=nnx}' 2>&1 | FileCheck %s --check-prefix=NEEDS-BUDGET
// RUN: not nnx-opt %s --split-input-file -p 'swap-insert{mode=auto th-tts=10}' 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: not nnx-opt %s --split-input-file -p 'swap-insert{policy=seed mode=auto memory-budget=100}' 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: not nnx-opt %s --split-input-file -p 'swap-insert{dtype=auto}' 2>&1 | FileCheck %s --check-prefix=DTYPE-AUTO
// RUN: not nnx-opt %s --split-input-file -p 'swap-insert{policy=nnx mode=auto memory-budget=1}' 2>&1 | FileCheck %s --check-prefix=NNX-BUDGET
// RUN: nnx-opt %s --split-input-file --verify-diagnostics
// MODE: error: swap-insert: mode must be one of ['swap', 'compress', 'both', 'auto'], got 'zip'
// POLICY: error: swap-insert: policy must be one of ['seed', 'nnx'], got 'best'
// NEEDS-BUDGET: error: swap-insert: policy=nnx needs memory-budget
// mode=auto and dtype=auto are the planner's choices: without a budget, or with
// policy=seed given, they are an error.
// AUTO: error: swap-insert: mode=auto needs policy=nnx (the default when memory-budget is set)
// DTYPE-AUTO: error: swap-insert: dtype=auto needs policy=nnx (the default when memory-budget is set)
// NNX-BUDGET: error: 'func.func' op swap-insert: no plan fits memory-budget=1 in @ok with policy=nnx mode=auto dtype=auto (no-swap peak 32768 bytes
// DTYPE: error: swap-insert: dtype must be one of ['f16', 'bf16', 'i8', 'auto'], got 'f8'
// A budget alone is the planner (policy=nnx mode=auto dtype=auto); policy=seed is the
// threshold search with mode=swap dtype=f16. Both name the no-swap peak and the
// lowest peak they reached.
// BUDGET: error: 'func.func' op swap-insert: no plan fits memory-budget=1 in @ok with policy=nnx mode=auto dtype=auto (no-swap peak 32768 bytes, lowest peak found
// SEED-BUDGET: error: 'func.func' op swap-insert: no setting fits memory-budget=1 in @ok with policy=seed mode=swap dtype=f16 (no-swap peak 32768 bytes, lowest peak found

func.func @ok(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %a = graph.relu(%x) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %b = graph.sigmoid(%a) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = graph.add(%b, %a) : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  func.return %y : tensor<64x32xf32>
}

// -----

// A swap_in of a value that no swap_out produced.
func.func @no_reduction(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{restoration without its reduction}}
  %r = graph.swap_in(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

// A decompress_tensor of a plain f16 tensor.
func.func @no_compress(%x: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error@+1 {{restoration without its reduction}}
  %r = graph.decompress_tensor(%x) : (tensor<4xf16>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

// A prefetch edge from the consumer itself would be a cycle: the block order check
// rejects the later-defined `after` operand (reported at the block's first op).
func.func @cycle(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{graph.swap_in (op #2 of the block) uses a value of graph.add (op #3) that comes later in the block}}
  %a = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %h = graph.swap_out(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %r = graph.swap_in(%h) after(%y : tensor<4xf32>) : (tensor<4xf32>) -> tensor<4xf32>
  %y = graph.add(%r, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
