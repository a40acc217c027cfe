// RUN: nnx-opt %s --pass-pipeline='builtin.module(graph-fold-constants,func.func(dce))' --mlir-print-ir-after-all -o /dev/null 2>&1 | FileCheck %s
// RUN: nnx-opt %s -p graph-fold-constants,dce --print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=FLAT
// RUN: nnx-opt %s -p dce --mlir-print-ir-before-all 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFORE

// CHECK:      // -----// IR Dump After graph-fold-constants //----- //
// CHECK-NEXT: builtin.module {
// CHECK:        %r = graph.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK:      // -----// IR Dump After dce ('func.func' operation: @f) //----- //
// CHECK-NEXT: func.func @f
// CHECK:      // -----// IR Dump After dce ('func.func' operation: @g) //----- //
// CHECK-NEXT: func.func @g

// FLAT: // -----// IR Dump After graph-fold-constants //----- //
// FLAT: // -----// IR Dump After dce //----- //
// FLAT-NOT: IR Dump

// BEFORE: // -----// IR Dump Before dce //----- //
// BEFORE: graph.relu
func.func @f() -> tensor<2xf32> {
  %a = graph.constant dense<-1.0> : tensor<2xf32>
  %r = graph.relu(%a) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

func.func @g(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
