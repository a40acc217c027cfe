// RUN: nnx-opt %s --split-input-file -p graph-fold-constants | FileCheck %s
// RUN: nnx-opt %s --split-input-file --pass-pipeline='builtin.module(graph-fold-constants{max-elements=2})' | FileCheck %s --check-prefix=MAX

// A chain of constant ops folds in one run; the inputs left unused are erased.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %r = graph.constant dense<[4.000000e+00, 0.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = graph.add(%x, %r)
// CHECK-NEXT:    func.return %y
// MAX-LABEL: func.func @chain
// MAX-NEXT:    %r = graph.constant dense<[4.000000e+00, 0.000000e+00]> : tensor<2xf32>
func.func @chain(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = graph.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %b = graph.constant dense<[3.0, 1.0]> : tensor<2xf32>
  %s = graph.add(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %r = graph.relu(%s) : (tensor<2xf32>) -> tensor<2xf32>
  %y = graph.add(%x, %r) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

// Results of more than 16 elements become dense_resource blobs, printed in the
// resource section; max-elements stops folding of bigger results.
// CHECK-LABEL: func.func @big
// CHECK-NEXT:    %r = graph.constant dense_resource<[[BLOB:r_[0-9]+]]> : tensor<4x5xf32>
// CHECK-NEXT:    func.return %r
// CHECK:       {-#
// CHECK-NEXT:    dialect_resources: {
// CHECK-NEXT:      builtin: {
// CHECK-NEXT:        [[BLOB]]: "0x04000000
// MAX-LABEL: func.func @big
// MAX:         graph.relu
func.func @big() -> tensor<4x5xf32> {
  %a = graph.constant dense<-1.5> : tensor<4x5xf32>
  %r = graph.relu(%a) : (tensor<4x5xf32>) -> tensor<4x5xf32>
  func.return %r : tensor<4x5xf32>
}

// -----

// Control edges: an op ordered after a computed value keeps its `after` edge and
// is not folded; one ordered only after constants folds.
// CHECK-LABEL: func.func @after
// CHECK:         %k = graph.relu(%a) after(%y : tensor<2xf32>)
// CHECK:         %m = graph.constant dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32>
// CHECK-NOT:     after(%b
func.func @after(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %a = graph.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %b = graph.constant dense<[5.0, 5.0]> : tensor<2xf32>
  %y = graph.add(%x, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %k = graph.relu(%a) after(%y : tensor<2xf32>) : (tensor<2xf32>) -> tensor<2xf32>
  %m = graph.relu(%a) after(%b : tensor<2xf32>) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y, %k, %m : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// Several results; ops inside a graph.subgraph fold too.
// CHECK-LABEL: func.func @split
// CHECK-NEXT:    %a = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %b = graph.constant dense<[3.000000e+00, 4.000000e+00, 5.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:    %o = graph.subgraph(%i = %a)
// CHECK-NEXT:      %r = graph.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK-NEXT:      %t = graph.add(%i, %r)
func.func @split() -> (tensor<2xf32>, tensor<3xf32>, tensor<2xf32>) {
  %d = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>
  %s = graph.constant dense<[2, 3]> : tensor<2xi64>
  %a, %b = graph.split(%d, %s) {axis = 0 : i64} : (tensor<5xf32>, tensor<2xi64>) -> (tensor<2xf32>, tensor<3xf32>)
  %o = graph.subgraph(%i = %a) : (tensor<2xf32>) -> (tensor<2xf32>) {
    %c = graph.constant dense<-3.0> : tensor<2xf32>
    %r = graph.relu(%c) : (tensor<2xf32>) -> tensor<2xf32>
    %t = graph.add(%i, %r) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    graph.yield %t : tensor<2xf32>
  }
  func.return %a, %b, %o : tensor<2xf32>, tensor<3xf32>, tensor<2xf32>
}
