// RUN: nnx-opt %s --pass-pipeline='builtin.module(graph-fold-constants{max-elements=16},func.func(canonicalize),dce)' | FileCheck %s
// RUN: nnx-opt %s -p 'graph-fold-constants{max-elements=16},canonicalize,dce' | FileCheck %s
// RUN: nnx-opt %s --pass-pipeline='builtin.module(func.func(graph-fold-constants))' | FileCheck %s
// RUN: nnx-opt %s -pass-pipeline='builtin.module(any(graph-fold-constants))' | FileCheck %s
// RUN: nnx-opt %s -graph-fold-constants -dce | FileCheck %s
// RUN: nnx-opt %s --pass-pipeline='builtin.module(graph-fold-constants{max-elements=1})' | FileCheck %s --check-prefix=SMALL
// RUN: nnx-opt %s --pass-pipeline='builtin.module(func.func())' | FileCheck %s --check-prefix=NONE

// Both functions fold: func.func(...) runs the nested pipeline on each function.

// CHECK-LABEL: func.func @f
// CHECK-NEXT:    %{{.*}} = graph.constant dense<[4.000000e+00, 0.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    graph.add
// CHECK-NEXT:    func.return
// SMALL-LABEL: func.func @f
// SMALL:         graph.add(%{{.*}}, %{{.*}}) : (tensor<2xf32>, tensor<2xf32>)
// SMALL:         graph.relu
// NONE-LABEL:  func.func @f
// NONE:          graph.relu
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = graph.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %b = graph.constant dense<[3.0, 1.0]> : tensor<2xf32>
  %s = graph.add(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %r = graph.relu(%s) : (tensor<2xf32>) -> tensor<2xf32>
  %y = graph.add(%x, %r) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// CHECK-LABEL: func.func @g
// CHECK-NEXT:    %{{.*}} = graph.constant dense<[0.000000e+00, 5.000000e-01]> : tensor<2xf32>
// CHECK-NEXT:    func.return
func.func @g() -> tensor<2xf32> {
  %a = graph.constant dense<[-1.0, 0.5]> : tensor<2xf32>
  %r = graph.relu(%a) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
