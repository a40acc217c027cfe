// RUN: nnx-opt %s --print-op-generic | FileCheck %s
// RUN: nnx-opt %s --mlir-print-op-generic | nnx-opt | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: nnx-opt %s --mlir-print-debuginfo | FileCheck %s --check-prefix=DEBUG

// CHECK:      "builtin.module"() ({
// CHECK-NEXT:   "func.func"() <{sym_name = "main", function_type = (tensor<1x2xf32>) -> tensor<1x2xf32>}> ({
// CHECK-NEXT:   ^bb0(%x: tensor<1x2xf32>):
// CHECK-NEXT:     %w = "graph.constant"() <{value = dense<{{.*}}> : tensor<1x2xf32>}> : () -> tensor<1x2xf32>
// CHECK-NEXT:     %s = "graph.add"(%x, %w) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:     %r = "graph.relu"(%s, %w) <{operandSegmentSizes = array<i32: 1, 1>}> : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:     "func.return"(%r) : (tensor<1x2xf32>) -> ()
// CHECK-NEXT:   }) : () -> ()
// CHECK-NEXT: }) : () -> ()

// ROUNDTRIP: %r = graph.relu(%s) after(%w : tensor<1x2xf32>) : (tensor<1x2xf32>) -> tensor<1x2xf32>

// DEBUG: %s = graph.add(%x, %w) : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32> loc("{{.*}}generic.mlir":[[# @LINE + 4]]:3)
// DEBUG: %r = graph.relu(%s) after(%w : tensor<1x2xf32>) : (tensor<1x2xf32>) -> tensor<1x2xf32> loc("conv1")
func.func @main(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %w = graph.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %s = graph.add(%x, %w) : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  %r = graph.relu(%s) after(%w : tensor<1x2xf32>) : (tensor<1x2xf32>) -> tensor<1x2xf32> loc("conv1")
  func.return %r : tensor<1x2xf32>
}
