// A failing pass precondition is an error at the op's location (PassError), exit 1,
// and -o is not written.

// RUN: not nnx-opt %s -p graph-fold-constants 2>&1 | FileCheck %s
// RUN: rm -f %t.out
// RUN: not nnx-opt %s -p graph-fold-constants -o %t.out
// RUN: not ls %t.out
// RUN: not nnx-opt %s -p 'graph-fold-constants{max-elements=-1}' 2>&1 | FileCheck %s --check-prefix=OPT

// CHECK: fold-errors.mlir:[[# @LINE + 4]]:3: error: 'graph.constant' op dense_resource<missing_blob> has no blob in the file
// CHECK-NOT: Traceback
// OPT: error: graph-fold-constants: max-elements must be >= 0, got -1
func.func @f() -> tensor<2xf32> {
  %a = graph.constant dense_resource<missing_blob> : tensor<2xf32>
  %r = graph.relu(%a) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
