// Unmatched expectations and unexpected diagnostics are reported with file:line
// like mlir-opt, and the exit status is 1.

// RUN: not nnx-opt %s --split-input-file --verify-diagnostics 2>&1 | FileCheck %s

// CHECK-DAG: verify-diagnostics-mismatch.mlir:[[# @LINE + 4]]:3: error: unexpected error: 'graph.relu' op result #0 has type tensor<5xf32>
// CHECK-DAG: verify-diagnostics-mismatch.mlir:[[# @LINE + 4]]:6: error: expected error "something else" was not produced
// CHECK-NOT: Traceback
func.func @wrong_message(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = graph.relu(%x) : (tensor<2xf32>) -> tensor<5xf32>
  // expected-error@-1 {{something else}}
  func.return %x : tensor<2xf32>
}

// -----

// CHECK-DAG: verify-diagnostics-mismatch.mlir:[[# @LINE + 2]]:6: error: expected warning "never emitted" was not produced
func.func @no_warning(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-warning@+1 {{never emitted}}
  func.return %x : tensor<2xf32>
}
