// Input from stdin (no file or '-'), output to -o (written atomically).

// RUN: nnx-opt < %s | FileCheck %s
// RUN: nnx-opt - < %s | FileCheck %s
// RUN: cat %s | nnx-opt -p graph-fold-constants | FileCheck %s --check-prefix=FOLD
// RUN: nnx-opt %s -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: nnx-opt %t.mlir | FileCheck %s

// A failing run leaves an existing -o file untouched.
// RUN: not nnx-opt %s -p no-such-pass -o %t.mlir
// RUN: FileCheck %s < %t.mlir

// Errors from stdin name <stdin>.
// RUN: echo 'func.func @f(' | not nnx-opt 2>&1 | FileCheck %s --check-prefix=STDIN
// STDIN: <stdin>:2:1: error:

// CHECK: func.func @f(%x: tensor<2xf32>) -> tensor<2xf32>
// CHECK: graph.relu(%a)
// FOLD: graph.constant dense<[1.000000e+00, 0.000000e+00]>
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = graph.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %r = graph.relu(%a) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
