// canonicalize and dce are xDSL's passes: they erase unused side-effect-free ops.

// RUN: nnx-opt %s -p canonicalize | FileCheck %s
// RUN: nnx-opt %s -p dce | FileCheck %s
// RUN: nnx-opt %s --pass-pipeline='builtin.module(func.func(canonicalize,dce))' | FileCheck %s

// CHECK-LABEL: func.func @f
// CHECK:         %u = builtin.unrealized_conversion_cast %x : tensor<2xf32> to tensor<2xi32>
// CHECK-NEXT:    %v = builtin.unrealized_conversion_cast %u : tensor<2xi32> to tensor<2xf32>
// CHECK-NOT:     tensor<2xf16>
// CHECK:         %r = graph.relu(%v)
// CHECK:         func.return %r
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %u = builtin.unrealized_conversion_cast %x : tensor<2xf32> to tensor<2xi32>
  %v = builtin.unrealized_conversion_cast %u : tensor<2xi32> to tensor<2xf32>
  %dead = builtin.unrealized_conversion_cast %x : tensor<2xf32> to tensor<2xf16>
  %r = graph.relu(%v) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// Graph ops and constants are side-effect free: unused ones go, used ones stay.
// CHECK-LABEL: func.func @graph_ops
// CHECK-NOT:     graph.constant
// CHECK-NOT:     graph.add
// CHECK:         %y = graph.relu(%x)
// CHECK-NEXT:    func.return %y
func.func @graph_ops(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %dead = graph.add(%x, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %y = graph.relu(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
