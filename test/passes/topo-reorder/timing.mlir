// timing=direct (the default: a candidate's lowering timed without building chip IR,
// MPU tile plans memoized across candidates) measures the same cycles as timing=ir
// (lower-to-chip on chip IR per candidate, the original method): with no time limit
// the search is deterministic, so both pick the same order and report the same
// whole-model cycles. Graph: two conv branches and a relu from %x joined by adds
// (several orders, compiled and simulated).

// RUN: nnx-opt %s -p 'topo-reorder{timing=ir time-limit=0 jobs=1 schedule=false report="%t.ir.json"}' -o %t.ir.mlir
// RUN: nnx-opt %s -p 'topo-reorder{timing=direct time-limit=0 jobs=1 schedule=false report="%t.direct.json"}' -o %t.direct.mlir
// RUN: diff %t.ir.mlir %t.direct.mlir
// RUN: grep -A9 '"whole_model_cycles"' %t.ir.json > %t.ir.cycles
// RUN: grep -A9 '"whole_model_cycles"' %t.direct.json > %t.direct.cycles
// RUN: diff %t.ir.cycles %t.direct.cycles
// RUN: FileCheck %s < %t.direct.cycles

// Every whole order the check compiled, with the same simulated cycles under both
// timings (the diff above); the searched order beats the ONNX order here.
// CHECK:      "whole_model_cycles"
// CHECK-NEXT:   "onnx": {{[0-9]+}}
// CHECK-NEXT:   "search": {{[0-9]+}}
// CHECK-NEXT:   "heft": {{[0-9]+}}
// CHECK-NEXT:   "random": {{[0-9]+}}
func.func @main(%x: tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
  %w = graph.constant dense<0.5> : tensor<16x16x3x3xf32>
  %v = graph.constant dense<0.25> : tensor<16x16x1x1xf32>
  %r = graph.relu(%x) : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
  %c = graph.conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
  %s = graph.sigmoid(%c) : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
  %d = graph.conv(%r, %v) : (tensor<1x16x32x32xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x32x32xf32>
  %a = graph.add(%r, %s) : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
  %b = graph.add(%a, %d) : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
  func.return %b : tensor<1x16x32x32xf32>
}
