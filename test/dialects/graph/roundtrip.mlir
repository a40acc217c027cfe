// Round trip of every graph op through the custom and the generic form.
// RUN: nnx-opt %s | nnx-opt | FileCheck %s
// RUN: nnx-opt %s --print-op-generic | nnx-opt | FileCheck %s
// RUN: nnx-opt %s --print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: %if mlir-opt %{ nnx-opt %s --print-op-generic | mlir-opt-19 --allow-unregistered-dialect > %t %}
//
// The first functions exercise the structure shared by all ops (after edges,
// absent optional inputs and outputs, variadic groups, discardable attributes,
// dense_resource weights, subgraphs); the rest has one function per ONNX operator
// case (generated from test/python/test_graph_dialect.py's CASES, outputs from ONNX
// shape inference).

func.func @structure(%x: tensor<1x3x8x8xf32>, %s: tensor<8xf32>) -> (tensor<1x3x8x8xf32>, tensor<1x3x8x1xf32>) {
  %w = graph.constant dense_resource<graph_rt_w> : tensor<3x1x1x1xf32>
  %c = graph.conv(%x, %w) {group = 3 : i64} : (tensor<1x3x8x8xf32>, tensor<3x1x1x1xf32>) -> tensor<1x3x8x8xf32>
  %r = graph.relu(%x) {nnx.tat = 3 : i64} after(%c : tensor<1x3x8x8xf32>) : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  %y, %inv = graph.layer_normalization(%r, %s) {epsilon = 1.000000e-05 : f32} after(%c, %r : tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>) : (tensor<1x3x8x8xf32>, tensor<8xf32>) -> (tensor<1x3x8x8xf32>, none, tensor<1x3x8x1xf32>)
  %p, %i = graph.max_pool(%y) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>) -> (tensor<1x3x8x8xf32>, tensor<1x3x8x8xi64>)
  %sizes = graph.constant dense<[1, 3, 8, 8]> : tensor<4xi64>
  %z = graph.resize(%p, none, none, %sizes) {mode = "nearest"} after(%i : tensor<1x3x8x8xi64>) : (tensor<1x3x8x8xf32>, tensor<4xi64>) -> tensor<1x3x8x8xf32>
  %o = graph.subgraph(%a = %z, %b = %p) : (tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>) -> (tensor<1x3x8x8xf32>) {
    %m = graph.max(%a, %b, %a) : (tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
    graph.yield %m : tensor<1x3x8x8xf32>
  }
  func.return %o, %inv : tensor<1x3x8x8xf32>, tensor<1x3x8x1xf32>
}
// CHECK-LABEL: func.func @structure(
// CHECK-SAME: %x: tensor<1x3x8x8xf32>, %s: tensor<8xf32>) -> (tensor<1x3x8x8xf32>, tensor<1x3x8x1xf32>) {
// CHECK-NEXT: %w = graph.constant dense_resource<graph_rt_w> : tensor<3x1x1x1xf32>
// CHECK-NEXT: %c = graph.conv(%x, %w) {group = 3 : i64} : (tensor<1x3x8x8xf32>, tensor<3x1x1x1xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: %r = graph.relu(%x) {nnx.tat = 3 : i64} after(%c : tensor<1x3x8x8xf32>) : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: %y, %inv = graph.layer_normalization(%r, %s) {epsilon = 1.000000e-05 : f32} after(%c, %r : tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>) : (tensor<1x3x8x8xf32>, tensor<8xf32>) -> (tensor<1x3x8x8xf32>, none, tensor<1x3x8x1xf32>)
// CHECK-NEXT: %p, %i = graph.max_pool(%y) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>) -> (tensor<1x3x8x8xf32>, tensor<1x3x8x8xi64>)
// CHECK-NEXT: %sizes = graph.constant dense<[1, 3, 8, 8]> : tensor<4xi64>
// CHECK-NEXT: %z = graph.resize(%p, none, none, %sizes) {mode = "nearest"} after(%i : tensor<1x3x8x8xi64>) : (tensor<1x3x8x8xf32>, tensor<4xi64>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: %o = graph.subgraph(%a = %z, %b = %p) : (tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>) -> (tensor<1x3x8x8xf32>) {
// CHECK-NEXT: %m = graph.max(%a, %b, %a) : (tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: graph.yield %m : tensor<1x3x8x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %o, %inv : tensor<1x3x8x8xf32>, tensor<1x3x8x1xf32>
// CHECK-NEXT: }

// GENERIC-LABEL: "func.func"() <{sym_name = "structure"
// GENERIC: %c = "graph.conv"(%x, %w) <{group = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<1x3x8x8xf32>, tensor<3x1x1x1xf32>) -> tensor<1x3x8x8xf32>
// GENERIC-NEXT: %r = "graph.relu"(%x, %c) <{operandSegmentSizes = array<i32: 1, 1>}> {nnx.tat = 3 : i64} : (tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
// GENERIC-NEXT: %y, %inv = "graph.layer_normalization"(%r, %s, %c, %r) <{epsilon = 1.000000e-05 : f32, resultSegmentSizes = array<i32: 1, 0, 1>, operandSegmentSizes = array<i32: 1, 1, 0, 2>}> : (tensor<1x3x8x8xf32>, tensor<8xf32>, tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>) -> (tensor<1x3x8x8xf32>, tensor<1x3x8x1xf32>)
// GENERIC: %z = "graph.resize"(%p, %sizes, %i) <{mode = "nearest", operandSegmentSizes = array<i32: 1, 0, 0, 1, 1>}>

func.func @abs(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.abs(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @abs(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.abs(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @acos(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.acos(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @acos(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.acos(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @acosh(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.acosh(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @acosh(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.acosh(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @add(%x0: tensor<2x3x4xf32>, %x1: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %y = graph.add(%x0, %x1) : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}
// CHECK-LABEL: func.func @add(
// CHECK-SAME: %x0: tensor<2x3x4xf32>, %x1: tensor<4xf32>) -> tensor<2x3x4xf32> {
// CHECK-NEXT: %y = graph.add(%x0, %x1) : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: func.return %y : tensor<2x3x4xf32>
// CHECK-NEXT: }

func.func @add_bcast(%x0: tensor<2x1x4xf32>, %x1: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %y = graph.add(%x0, %x1) : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}
// CHECK-LABEL: func.func @add_bcast(
// CHECK-SAME: %x0: tensor<2x1x4xf32>, %x1: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
// CHECK-NEXT: %y = graph.add(%x0, %x1) : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: func.return %y : tensor<2x3x4xf32>
// CHECK-NEXT: }

func.func @and(%x0: tensor<2x3xi1>, %x1: tensor<3xi1>) -> tensor<2x3xi1> {
  %y = graph.and(%x0, %x1) : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}
// CHECK-LABEL: func.func @and(
// CHECK-SAME: %x0: tensor<2x3xi1>, %x1: tensor<3xi1>) -> tensor<2x3xi1> {
// CHECK-NEXT: %y = graph.and(%x0, %x1) : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: func.return %y : tensor<2x3xi1>
// CHECK-NEXT: }

func.func @argmax(%x0: tensor<2x3x4xf32>) -> tensor<2x1x4xi64> {
  %y = graph.arg_max(%x0) {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
  func.return %y : tensor<2x1x4xi64>
}
// CHECK-LABEL: func.func @argmax(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x1x4xi64> {
// CHECK-NEXT: %y = graph.arg_max(%x0) {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
// CHECK-NEXT: func.return %y : tensor<2x1x4xi64>
// CHECK-NEXT: }

func.func @argmax_nokeep(%x0: tensor<2x3x4xf32>) -> tensor<2x3xi64> {
  %y = graph.arg_max(%x0) {axis = -1 : i64, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xi64>
  func.return %y : tensor<2x3xi64>
}
// CHECK-LABEL: func.func @argmax_nokeep(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x3xi64> {
// CHECK-NEXT: %y = graph.arg_max(%x0) {axis = -1 : i64, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xi64>
// CHECK-NEXT: func.return %y : tensor<2x3xi64>
// CHECK-NEXT: }

func.func @argmin(%x0: tensor<2x3x4xf32>) -> tensor<1x3x4xi64> {
  %y = graph.arg_min(%x0) {select_last_index = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<1x3x4xi64>
  func.return %y : tensor<1x3x4xi64>
}
// CHECK-LABEL: func.func @argmin(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<1x3x4xi64> {
// CHECK-NEXT: %y = graph.arg_min(%x0) {select_last_index = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<1x3x4xi64>
// CHECK-NEXT: func.return %y : tensor<1x3x4xi64>
// CHECK-NEXT: }

func.func @asin(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.asin(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @asin(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.asin(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @asinh(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.asinh(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @asinh(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.asinh(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @atan(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.atan(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @atan(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.atan(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @atanh(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.atanh(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @atanh(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.atanh(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @averagepool(%x0: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  %y = graph.average_pool(%x0) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}
// CHECK-LABEL: func.func @averagepool(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
// CHECK-NEXT: %y = graph.average_pool(%x0) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x4x4xf32>
// CHECK-NEXT: }

func.func @averagepool_ceil(%x0: tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32> {
  %y = graph.average_pool(%x0) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64, count_include_pad = 1 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}
// CHECK-LABEL: func.func @averagepool_ceil(
// CHECK-SAME: %x0: tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32> {
// CHECK-NEXT: %y = graph.average_pool(%x0) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64, count_include_pad = 1 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x4x4xf32>
// CHECK-NEXT: }

func.func @averagepool_same(%x0: tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32> {
  %y = graph.average_pool(%x0) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, auto_pad = "SAME_UPPER"} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}
// CHECK-LABEL: func.func @averagepool_same(
// CHECK-SAME: %x0: tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32> {
// CHECK-NEXT: %y = graph.average_pool(%x0) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, auto_pad = "SAME_UPPER"} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x4x4xf32>
// CHECK-NEXT: }

func.func @batchnormalization(%x0: tensor<1x3x8x8xf32>, %x1: tensor<3xf32>, %x2: tensor<3xf32>, %x3: tensor<3xf32>, %x4: tensor<3xf32>) -> tensor<1x3x8x8xf32> {
  %y = graph.batch_normalization(%x0, %x1, %x2, %x3, %x4) {epsilon = 1.000000e-05 : f32} : (tensor<1x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf32>
  func.return %y : tensor<1x3x8x8xf32>
}
// CHECK-LABEL: func.func @batchnormalization(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>, %x1: tensor<3xf32>, %x2: tensor<3xf32>, %x3: tensor<3xf32>, %x4: tensor<3xf32>) -> tensor<1x3x8x8xf32> {
// CHECK-NEXT: %y = graph.batch_normalization(%x0, %x1, %x2, %x3, %x4) {epsilon = 1.000000e-05 : f32} : (tensor<1x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x8x8xf32>
// CHECK-NEXT: }

func.func @batchnormalization_opset7(%x0: tensor<1x3x8x8xf32>, %x1: tensor<3xf32>, %x2: tensor<3xf32>, %x3: tensor<3xf32>, %x4: tensor<3xf32>) -> tensor<1x3x8x8xf32> {
  %y = graph.batch_normalization(%x0, %x1, %x2, %x3, %x4) {spatial = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf32>
  func.return %y : tensor<1x3x8x8xf32>
}
// CHECK-LABEL: func.func @batchnormalization_opset7(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>, %x1: tensor<3xf32>, %x2: tensor<3xf32>, %x3: tensor<3xf32>, %x4: tensor<3xf32>) -> tensor<1x3x8x8xf32> {
// CHECK-NEXT: %y = graph.batch_normalization(%x0, %x1, %x2, %x3, %x4) {spatial = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x8x8xf32>
// CHECK-NEXT: }

func.func @cast(%x0: tensor<2x3xf32>) -> tensor<2x3xi64> {
  %y = graph.cast(%x0) {to = 7 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi64>
  func.return %y : tensor<2x3xi64>
}
// CHECK-LABEL: func.func @cast(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xi64> {
// CHECK-NEXT: %y = graph.cast(%x0) {to = 7 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi64>
// CHECK-NEXT: func.return %y : tensor<2x3xi64>
// CHECK-NEXT: }

func.func @cast_bool(%x0: tensor<2x3xi64>) -> tensor<2x3xi1> {
  %y = graph.cast(%x0) {to = 9 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}
// CHECK-LABEL: func.func @cast_bool(
// CHECK-SAME: %x0: tensor<2x3xi64>) -> tensor<2x3xi1> {
// CHECK-NEXT: %y = graph.cast(%x0) {to = 9 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT: func.return %y : tensor<2x3xi1>
// CHECK-NEXT: }

func.func @castlike(%x0: tensor<2x3xf32>, %x1: tensor<1xi64>) -> tensor<2x3xi64> {
  %y = graph.cast_like(%x0, %x1) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3xi64>
  func.return %y : tensor<2x3xi64>
}
// CHECK-LABEL: func.func @castlike(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<1xi64>) -> tensor<2x3xi64> {
// CHECK-NEXT: %y = graph.cast_like(%x0, %x1) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3xi64>
// CHECK-NEXT: func.return %y : tensor<2x3xi64>
// CHECK-NEXT: }

func.func @ceil(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.ceil(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @ceil(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.ceil(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @celu(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.celu(%x0) {alpha = 2.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @celu(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.celu(%x0) {alpha = 2.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @clip(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c0 = graph.constant dense<0.000000e+00> : tensor<f32>
  %c1 = graph.constant dense<6.000000e+00> : tensor<f32>
  %y = graph.clip(%x0, %c0, %c1) : (tensor<2x3xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @clip(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: %c1 = graph.constant dense<6.000000e+00> : tensor<f32>
// CHECK-NEXT: %y = graph.clip(%x0, %c0, %c1) : (tensor<2x3xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @clip_maxonly(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c0 = graph.constant dense<6.000000e+00> : tensor<f32>
  %y = graph.clip(%x0, none, %c0) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @clip_maxonly(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<6.000000e+00> : tensor<f32>
// CHECK-NEXT: %y = graph.clip(%x0, none, %c0) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @clip_attrs(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.clip(%x0) {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @clip_attrs(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.clip(%x0) {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @concat(%x0: tensor<2x3xf32>, %x1: tensor<2x5xf32>, %x2: tensor<2x1xf32>) -> tensor<2x9xf32> {
  %y = graph.concat(%x0, %x1, %x2) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x9xf32>
  func.return %y : tensor<2x9xf32>
}
// CHECK-LABEL: func.func @concat(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<2x5xf32>, %x2: tensor<2x1xf32>) -> tensor<2x9xf32> {
// CHECK-NEXT: %y = graph.concat(%x0, %x1, %x2) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x9xf32>
// CHECK-NEXT: func.return %y : tensor<2x9xf32>
// CHECK-NEXT: }

func.func @concat_neg(%x0: tensor<2x3xf32>, %x1: tensor<4x3xf32>) -> tensor<6x3xf32> {
  %y = graph.concat(%x0, %x1) {axis = -2 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  func.return %y : tensor<6x3xf32>
}
// CHECK-LABEL: func.func @concat_neg(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<4x3xf32>) -> tensor<6x3xf32> {
// CHECK-NEXT: %y = graph.concat(%x0, %x1) {axis = -2 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
// CHECK-NEXT: func.return %y : tensor<6x3xf32>
// CHECK-NEXT: }

func.func @constantofshape() -> tensor<2x3xf32> {
  %c0 = graph.constant dense<[2, 3]> : tensor<2xi64>
  %y = graph.constant_of_shape(%c0) {value = dense<1.500000e+00> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @constantofshape(
// CHECK-SAME: ) -> tensor<2x3xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[2, 3]> : tensor<2xi64>
// CHECK-NEXT: %y = graph.constant_of_shape(%c0) {value = dense<1.500000e+00> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @constantofshape_default() -> tensor<4xf32> {
  %c0 = graph.constant dense<4> : tensor<1xi64>
  %y = graph.constant_of_shape(%c0) : (tensor<1xi64>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK-LABEL: func.func @constantofshape_default(
// CHECK-SAME: ) -> tensor<4xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<4> : tensor<1xi64>
// CHECK-NEXT: %y = graph.constant_of_shape(%c0) : (tensor<1xi64>) -> tensor<4xf32>
// CHECK-NEXT: func.return %y : tensor<4xf32>
// CHECK-NEXT: }

func.func @constantofshape_i64() -> tensor<2x2xi64> {
  %c0 = graph.constant dense<2> : tensor<2xi64>
  %y = graph.constant_of_shape(%c0) {value = dense<7> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<2x2xi64>
  func.return %y : tensor<2x2xi64>
}
// CHECK-LABEL: func.func @constantofshape_i64(
// CHECK-SAME: ) -> tensor<2x2xi64> {
// CHECK-NEXT: %c0 = graph.constant dense<2> : tensor<2xi64>
// CHECK-NEXT: %y = graph.constant_of_shape(%c0) {value = dense<7> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<2x2xi64>
// CHECK-NEXT: func.return %y : tensor<2x2xi64>
// CHECK-NEXT: }

func.func @conv(%x0: tensor<1x3x8x8xf32>, %x1: tensor<6x3x3x3xf32>, %x2: tensor<6xf32>) -> tensor<1x6x8x8xf32> {
  %y = graph.conv(%x0, %x1, %x2) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<6x3x3x3xf32>, tensor<6xf32>) -> tensor<1x6x8x8xf32>
  func.return %y : tensor<1x6x8x8xf32>
}
// CHECK-LABEL: func.func @conv(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>, %x1: tensor<6x3x3x3xf32>, %x2: tensor<6xf32>) -> tensor<1x6x8x8xf32> {
// CHECK-NEXT: %y = graph.conv(%x0, %x1, %x2) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<6x3x3x3xf32>, tensor<6xf32>) -> tensor<1x6x8x8xf32>
// CHECK-NEXT: func.return %y : tensor<1x6x8x8xf32>
// CHECK-NEXT: }

func.func @conv_group(%x0: tensor<1x3x8x8xf32>, %x1: tensor<6x1x3x3xf32>) -> tensor<1x6x2x2xf32> {
  %y = graph.conv(%x0, %x1) {group = 3 : i64, strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x2x2xf32>
  func.return %y : tensor<1x6x2x2xf32>
}
// CHECK-LABEL: func.func @conv_group(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>, %x1: tensor<6x1x3x3xf32>) -> tensor<1x6x2x2xf32> {
// CHECK-NEXT: %y = graph.conv(%x0, %x1) {group = 3 : i64, strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x2x2xf32>
// CHECK-NEXT: func.return %y : tensor<1x6x2x2xf32>
// CHECK-NEXT: }

func.func @conv_same(%x0: tensor<1x3x7x7xf32>, %x1: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %y = graph.conv(%x0, %x1) {auto_pad = "SAME_UPPER", strides = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}
// CHECK-LABEL: func.func @conv_same(
// CHECK-SAME: %x0: tensor<1x3x7x7xf32>, %x1: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
// CHECK-NEXT: %y = graph.conv(%x0, %x1) {auto_pad = "SAME_UPPER", strides = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT: func.return %y : tensor<1x4x4x4xf32>
// CHECK-NEXT: }

func.func @conv_valid(%x0: tensor<1x3x7x7xf32>, %x1: tensor<4x3x2x2xf32>) -> tensor<1x4x6x6xf32> {
  %y = graph.conv(%x0, %x1) {auto_pad = "VALID", kernel_shape = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>, tensor<4x3x2x2xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}
// CHECK-LABEL: func.func @conv_valid(
// CHECK-SAME: %x0: tensor<1x3x7x7xf32>, %x1: tensor<4x3x2x2xf32>) -> tensor<1x4x6x6xf32> {
// CHECK-NEXT: %y = graph.conv(%x0, %x1) {auto_pad = "VALID", kernel_shape = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>, tensor<4x3x2x2xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT: func.return %y : tensor<1x4x6x6xf32>
// CHECK-NEXT: }

func.func @conv_1d(%x0: tensor<1x2x10xf32>, %x1: tensor<4x2x3xf32>) -> tensor<1x4x3xf32> {
  %y = graph.conv(%x0, %x1) {strides = array<i64: 3>} : (tensor<1x2x10xf32>, tensor<4x2x3xf32>) -> tensor<1x4x3xf32>
  func.return %y : tensor<1x4x3xf32>
}
// CHECK-LABEL: func.func @conv_1d(
// CHECK-SAME: %x0: tensor<1x2x10xf32>, %x1: tensor<4x2x3xf32>) -> tensor<1x4x3xf32> {
// CHECK-NEXT: %y = graph.conv(%x0, %x1) {strides = array<i64: 3>} : (tensor<1x2x10xf32>, tensor<4x2x3xf32>) -> tensor<1x4x3xf32>
// CHECK-NEXT: func.return %y : tensor<1x4x3xf32>
// CHECK-NEXT: }

func.func @convtranspose(%x0: tensor<1x3x8x8xf32>, %x1: tensor<3x4x3x3xf32>, %x2: tensor<4xf32>) -> tensor<1x4x16x16xf32> {
  %y = graph.conv_transpose(%x0, %x1, %x2) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<3x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x16x16xf32>
  func.return %y : tensor<1x4x16x16xf32>
}
// CHECK-LABEL: func.func @convtranspose(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>, %x1: tensor<3x4x3x3xf32>, %x2: tensor<4xf32>) -> tensor<1x4x16x16xf32> {
// CHECK-NEXT: %y = graph.conv_transpose(%x0, %x1, %x2) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<3x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x16x16xf32>
// CHECK-NEXT: func.return %y : tensor<1x4x16x16xf32>
// CHECK-NEXT: }

func.func @convtranspose_group(%x0: tensor<1x3x8x8xf32>, %x1: tensor<3x2x2x2xf32>) -> tensor<1x6x16x16xf32> {
  %y = graph.conv_transpose(%x0, %x1) {group = 3 : i64, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<3x2x2x2xf32>) -> tensor<1x6x16x16xf32>
  func.return %y : tensor<1x6x16x16xf32>
}
// CHECK-LABEL: func.func @convtranspose_group(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>, %x1: tensor<3x2x2x2xf32>) -> tensor<1x6x16x16xf32> {
// CHECK-NEXT: %y = graph.conv_transpose(%x0, %x1) {group = 3 : i64, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<3x2x2x2xf32>) -> tensor<1x6x16x16xf32>
// CHECK-NEXT: func.return %y : tensor<1x6x16x16xf32>
// CHECK-NEXT: }

func.func @convtranspose_outshape(%x0: tensor<1x3x8x8xf32>, %x1: tensor<3x2x3x3xf32>) -> tensor<1x2x17x17xf32> {
  %y = graph.conv_transpose(%x0, %x1) {output_shape = array<i64: 17, 17>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x17x17xf32>
  func.return %y : tensor<1x2x17x17xf32>
}
// CHECK-LABEL: func.func @convtranspose_outshape(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>, %x1: tensor<3x2x3x3xf32>) -> tensor<1x2x17x17xf32> {
// CHECK-NEXT: %y = graph.conv_transpose(%x0, %x1) {output_shape = array<i64: 17, 17>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x17x17xf32>
// CHECK-NEXT: func.return %y : tensor<1x2x17x17xf32>
// CHECK-NEXT: }

func.func @convtranspose_same(%x0: tensor<1x3x8x8xf32>, %x1: tensor<3x2x3x3xf32>) -> tensor<1x2x16x16xf32> {
  %y = graph.conv_transpose(%x0, %x1) {auto_pad = "SAME_UPPER", strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x16x16xf32>
  func.return %y : tensor<1x2x16x16xf32>
}
// CHECK-LABEL: func.func @convtranspose_same(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>, %x1: tensor<3x2x3x3xf32>) -> tensor<1x2x16x16xf32> {
// CHECK-NEXT: %y = graph.conv_transpose(%x0, %x1) {auto_pad = "SAME_UPPER", strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x16x16xf32>
// CHECK-NEXT: func.return %y : tensor<1x2x16x16xf32>
// CHECK-NEXT: }

func.func @cos(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.cos(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @cos(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.cos(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @cosh(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.cosh(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @cosh(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.cosh(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @cumsum(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c0 = graph.constant dense<1> : tensor<i64>
  %y = graph.cum_sum(%x0, %c0) {exclusive = 1 : i64, reverse = 1 : i64} : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @cumsum(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<1> : tensor<i64>
// CHECK-NEXT: %y = graph.cum_sum(%x0, %c0) {exclusive = 1 : i64, reverse = 1 : i64} : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @depthtospace(%x0: tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32> {
  %y = graph.depth_to_space(%x0) {blocksize = 2 : i64, mode = "CRD"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  func.return %y : tensor<1x2x4x6xf32>
}
// CHECK-LABEL: func.func @depthtospace(
// CHECK-SAME: %x0: tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32> {
// CHECK-NEXT: %y = graph.depth_to_space(%x0) {blocksize = 2 : i64, mode = "CRD"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
// CHECK-NEXT: func.return %y : tensor<1x2x4x6xf32>
// CHECK-NEXT: }

func.func @div(%x0: tensor<2x3xf32>, %x1: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.div(%x0, %x1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @div(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.div(%x0, %x1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @dropout(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.dropout(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @dropout(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.dropout(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @dropout_mask(%x0: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
  %c0 = graph.constant dense<5.000000e-01> : tensor<f32>
  %c1 = graph.constant dense<false> : tensor<i1>
  %y0, %y1 = graph.dropout(%x0, %c0, %c1) : (tensor<2x3xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
  func.return %y0, %y1 : tensor<2x3xf32>, tensor<2x3xi1>
}
// CHECK-LABEL: func.func @dropout_mask(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
// CHECK-NEXT: %c0 = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %c1 = graph.constant dense<false> : tensor<i1>
// CHECK-NEXT: %y0, %y1 = graph.dropout(%x0, %c0, %c1) : (tensor<2x3xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
// CHECK-NEXT: func.return %y0, %y1 : tensor<2x3xf32>, tensor<2x3xi1>
// CHECK-NEXT: }

func.func @dropout_attr(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.dropout(%x0) {ratio = 1.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @dropout_attr(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.dropout(%x0) {ratio = 1.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @einsum(%x0: tensor<2x3x4xf32>, %x1: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %y = graph.einsum(%x0, %x1) {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  func.return %y : tensor<2x3x5xf32>
}
// CHECK-LABEL: func.func @einsum(
// CHECK-SAME: %x0: tensor<2x3x4xf32>, %x1: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
// CHECK-NEXT: %y = graph.einsum(%x0, %x1) {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT: func.return %y : tensor<2x3x5xf32>
// CHECK-NEXT: }

func.func @einsum_implicit(%x0: tensor<3x4xf32>, %x1: tensor<4xf32>) -> tensor<3xf32> {
  %y = graph.einsum(%x0, %x1) {equation = "ij,j"} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
// CHECK-LABEL: func.func @einsum_implicit(
// CHECK-SAME: %x0: tensor<3x4xf32>, %x1: tensor<4xf32>) -> tensor<3xf32> {
// CHECK-NEXT: %y = graph.einsum(%x0, %x1) {equation = "ij,j"} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
// CHECK-NEXT: func.return %y : tensor<3xf32>
// CHECK-NEXT: }

func.func @einsum_ellipsis(%x0: tensor<2x3x4x5xf32>) -> tensor<2x3x5x4xf32> {
  %y = graph.einsum(%x0) {equation = "...ij->...ji"} : (tensor<2x3x4x5xf32>) -> tensor<2x3x5x4xf32>
  func.return %y : tensor<2x3x5x4xf32>
}
// CHECK-LABEL: func.func @einsum_ellipsis(
// CHECK-SAME: %x0: tensor<2x3x4x5xf32>) -> tensor<2x3x5x4xf32> {
// CHECK-NEXT: %y = graph.einsum(%x0) {equation = "...ij->...ji"} : (tensor<2x3x4x5xf32>) -> tensor<2x3x5x4xf32>
// CHECK-NEXT: func.return %y : tensor<2x3x5x4xf32>
// CHECK-NEXT: }

func.func @elu(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.elu(%x0) {alpha = 5.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @elu(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.elu(%x0) {alpha = 5.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @equal(%x0: tensor<2x3xi64>, %x1: tensor<2x1xi64>) -> tensor<2x3xi1> {
  %y = graph.equal(%x0, %x1) : (tensor<2x3xi64>, tensor<2x1xi64>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}
// CHECK-LABEL: func.func @equal(
// CHECK-SAME: %x0: tensor<2x3xi64>, %x1: tensor<2x1xi64>) -> tensor<2x3xi1> {
// CHECK-NEXT: %y = graph.equal(%x0, %x1) : (tensor<2x3xi64>, tensor<2x1xi64>) -> tensor<2x3xi1>
// CHECK-NEXT: func.return %y : tensor<2x3xi1>
// CHECK-NEXT: }

func.func @erf(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.erf(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @erf(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.erf(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @exp(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.exp(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @exp(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.exp(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @expand(%x0: tensor<3x1xf32>) -> tensor<2x3x6xf32> {
  %c0 = graph.constant dense<[2, 1, 6]> : tensor<3xi64>
  %y = graph.expand(%x0, %c0) : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x6xf32>
  func.return %y : tensor<2x3x6xf32>
}
// CHECK-LABEL: func.func @expand(
// CHECK-SAME: %x0: tensor<3x1xf32>) -> tensor<2x3x6xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[2, 1, 6]> : tensor<3xi64>
// CHECK-NEXT: %y = graph.expand(%x0, %c0) : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x6xf32>
// CHECK-NEXT: func.return %y : tensor<2x3x6xf32>
// CHECK-NEXT: }

func.func @flatten(%x0: tensor<2x3x4x5xf32>) -> tensor<2x60xf32> {
  %y = graph.flatten(%x0) : (tensor<2x3x4x5xf32>) -> tensor<2x60xf32>
  func.return %y : tensor<2x60xf32>
}
// CHECK-LABEL: func.func @flatten(
// CHECK-SAME: %x0: tensor<2x3x4x5xf32>) -> tensor<2x60xf32> {
// CHECK-NEXT: %y = graph.flatten(%x0) : (tensor<2x3x4x5xf32>) -> tensor<2x60xf32>
// CHECK-NEXT: func.return %y : tensor<2x60xf32>
// CHECK-NEXT: }

func.func @flatten_axis0(%x0: tensor<2x3x4x5xf32>) -> tensor<1x120xf32> {
  %y = graph.flatten(%x0) {axis = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<1x120xf32>
  func.return %y : tensor<1x120xf32>
}
// CHECK-LABEL: func.func @flatten_axis0(
// CHECK-SAME: %x0: tensor<2x3x4x5xf32>) -> tensor<1x120xf32> {
// CHECK-NEXT: %y = graph.flatten(%x0) {axis = 0 : i64} : (tensor<2x3x4x5xf32>) -> tensor<1x120xf32>
// CHECK-NEXT: func.return %y : tensor<1x120xf32>
// CHECK-NEXT: }

func.func @flatten_neg(%x0: tensor<2x3x4x5xf32>) -> tensor<24x5xf32> {
  %y = graph.flatten(%x0) {axis = -1 : i64} : (tensor<2x3x4x5xf32>) -> tensor<24x5xf32>
  func.return %y : tensor<24x5xf32>
}
// CHECK-LABEL: func.func @flatten_neg(
// CHECK-SAME: %x0: tensor<2x3x4x5xf32>) -> tensor<24x5xf32> {
// CHECK-NEXT: %y = graph.flatten(%x0) {axis = -1 : i64} : (tensor<2x3x4x5xf32>) -> tensor<24x5xf32>
// CHECK-NEXT: func.return %y : tensor<24x5xf32>
// CHECK-NEXT: }

func.func @floor(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.floor(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @floor(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.floor(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @gather(%x0: tensor<5x4xf32>) -> tensor<2x2x4xf32> {
  %c0 = graph.constant dense<[[0, 1], [2, -1]]> : tensor<2x2xi64>
  %y = graph.gather(%x0, %c0) {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x2xi64>) -> tensor<2x2x4xf32>
  func.return %y : tensor<2x2x4xf32>
}
// CHECK-LABEL: func.func @gather(
// CHECK-SAME: %x0: tensor<5x4xf32>) -> tensor<2x2x4xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<{{\[\[}}0, 1], [2, -1]]> : tensor<2x2xi64>
// CHECK-NEXT: %y = graph.gather(%x0, %c0) {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x2xi64>) -> tensor<2x2x4xf32>
// CHECK-NEXT: func.return %y : tensor<2x2x4xf32>
// CHECK-NEXT: }

func.func @gather_scalar(%x0: tensor<5x4x3xf32>) -> tensor<5x3xf32> {
  %c0 = graph.constant dense<1> : tensor<i64>
  %y = graph.gather(%x0, %c0) {axis = 1 : i64} : (tensor<5x4x3xf32>, tensor<i64>) -> tensor<5x3xf32>
  func.return %y : tensor<5x3xf32>
}
// CHECK-LABEL: func.func @gather_scalar(
// CHECK-SAME: %x0: tensor<5x4x3xf32>) -> tensor<5x3xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<1> : tensor<i64>
// CHECK-NEXT: %y = graph.gather(%x0, %c0) {axis = 1 : i64} : (tensor<5x4x3xf32>, tensor<i64>) -> tensor<5x3xf32>
// CHECK-NEXT: func.return %y : tensor<5x3xf32>
// CHECK-NEXT: }

func.func @gatherelements(%x0: tensor<3x4xf32>) -> tensor<3x2xf32> {
  %c0 = graph.constant dense<[[0, 1], [2, 0], [1, 1]]> : tensor<3x2xi64>
  %y = graph.gather_elements(%x0, %c0) {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @gatherelements(
// CHECK-SAME: %x0: tensor<3x4xf32>) -> tensor<3x2xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<{{\[\[}}0, 1], [2, 0], [1, 1]]> : tensor<3x2xi64>
// CHECK-NEXT: %y = graph.gather_elements(%x0, %c0) {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
// CHECK-NEXT: func.return %y : tensor<3x2xf32>
// CHECK-NEXT: }

func.func @gathernd(%x0: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %c0 = graph.constant dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>
  %y = graph.gather_nd(%x0, %c0) : (tensor<2x3x4xf32>, tensor<2x2xi64>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @gathernd(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<{{\[\[}}0, 1], [1, 2]]> : tensor<2x2xi64>
// CHECK-NEXT: %y = graph.gather_nd(%x0, %c0) : (tensor<2x3x4xf32>, tensor<2x2xi64>) -> tensor<2x4xf32>
// CHECK-NEXT: func.return %y : tensor<2x4xf32>
// CHECK-NEXT: }

func.func @gathernd_batch(%x0: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %c0 = graph.constant dense<[[1], [0]]> : tensor<2x1xi64>
  %y = graph.gather_nd(%x0, %c0) {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @gathernd_batch(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<{{\[\[}}1], [0]]> : tensor<2x1xi64>
// CHECK-NEXT: %y = graph.gather_nd(%x0, %c0) {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
// CHECK-NEXT: func.return %y : tensor<2x4xf32>
// CHECK-NEXT: }

func.func @gelu(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.gelu(%x0) {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @gelu(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.gelu(%x0) {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @gemm(%x0: tensor<4x3xf32>, %x1: tensor<5x3xf32>, %x2: tensor<5xf32>) -> tensor<4x5xf32> {
  %y = graph.gemm(%x0, %x1, %x2) {transB = 1 : i64, alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32} : (tensor<4x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  func.return %y : tensor<4x5xf32>
}
// CHECK-LABEL: func.func @gemm(
// CHECK-SAME: %x0: tensor<4x3xf32>, %x1: tensor<5x3xf32>, %x2: tensor<5xf32>) -> tensor<4x5xf32> {
// CHECK-NEXT: %y = graph.gemm(%x0, %x1, %x2) {transB = 1 : i64, alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32} : (tensor<4x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT: func.return %y : tensor<4x5xf32>
// CHECK-NEXT: }

func.func @gemm_transa(%x0: tensor<3x4xf32>, %x1: tensor<3x5xf32>) -> tensor<4x5xf32> {
  %y = graph.gemm(%x0, %x1) {transA = 1 : i64} : (tensor<3x4xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  func.return %y : tensor<4x5xf32>
}
// CHECK-LABEL: func.func @gemm_transa(
// CHECK-SAME: %x0: tensor<3x4xf32>, %x1: tensor<3x5xf32>) -> tensor<4x5xf32> {
// CHECK-NEXT: %y = graph.gemm(%x0, %x1) {transA = 1 : i64} : (tensor<3x4xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT: func.return %y : tensor<4x5xf32>
// CHECK-NEXT: }

func.func @globalaveragepool(%x0: tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32> {
  %y = graph.global_average_pool(%x0) : (tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32>
  func.return %y : tensor<1x3x1x1xf32>
}
// CHECK-LABEL: func.func @globalaveragepool(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32> {
// CHECK-NEXT: %y = graph.global_average_pool(%x0) : (tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x1x1xf32>
// CHECK-NEXT: }

func.func @globalmaxpool(%x0: tensor<1x3x5xf32>) -> tensor<1x3x1xf32> {
  %y = graph.global_max_pool(%x0) : (tensor<1x3x5xf32>) -> tensor<1x3x1xf32>
  func.return %y : tensor<1x3x1xf32>
}
// CHECK-LABEL: func.func @globalmaxpool(
// CHECK-SAME: %x0: tensor<1x3x5xf32>) -> tensor<1x3x1xf32> {
// CHECK-NEXT: %y = graph.global_max_pool(%x0) : (tensor<1x3x5xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x1xf32>
// CHECK-NEXT: }

func.func @greater(%x0: tensor<2x3xf32>, %x1: tensor<3xf32>) -> tensor<2x3xi1> {
  %y = graph.greater(%x0, %x1) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}
// CHECK-LABEL: func.func @greater(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<3xf32>) -> tensor<2x3xi1> {
// CHECK-NEXT: %y = graph.greater(%x0, %x1) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT: func.return %y : tensor<2x3xi1>
// CHECK-NEXT: }

func.func @greaterorequal(%x0: tensor<2x3xf32>, %x1: tensor<3xf32>) -> tensor<2x3xi1> {
  %y = graph.greater_or_equal(%x0, %x1) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}
// CHECK-LABEL: func.func @greaterorequal(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<3xf32>) -> tensor<2x3xi1> {
// CHECK-NEXT: %y = graph.greater_or_equal(%x0, %x1) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT: func.return %y : tensor<2x3xi1>
// CHECK-NEXT: }

func.func @hardsigmoid(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.hard_sigmoid(%x0) {alpha = 2.500000e-01 : f32, beta = 4.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @hardsigmoid(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.hard_sigmoid(%x0) {alpha = 2.500000e-01 : f32, beta = 4.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @hardswish(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.hard_swish(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @hardswish(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.hard_swish(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @hardmax(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.hardmax(%x0) {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @hardmax(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.hardmax(%x0) {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @identity(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.identity(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @identity(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.identity(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @instancenormalization(%x0: tensor<1x3x8x8xf32>, %x1: tensor<3xf32>, %x2: tensor<3xf32>) -> tensor<1x3x8x8xf32> {
  %y = graph.instance_normalization(%x0, %x1, %x2) {epsilon = 1.000000e-03 : f32} : (tensor<1x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf32>
  func.return %y : tensor<1x3x8x8xf32>
}
// CHECK-LABEL: func.func @instancenormalization(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>, %x1: tensor<3xf32>, %x2: tensor<3xf32>) -> tensor<1x3x8x8xf32> {
// CHECK-NEXT: %y = graph.instance_normalization(%x0, %x1, %x2) {epsilon = 1.000000e-03 : f32} : (tensor<1x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x8x8xf32>
// CHECK-NEXT: }

func.func @isinf(%x0: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %y = graph.is_inf(%x0) {detect_negative = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}
// CHECK-LABEL: func.func @isinf(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xi1> {
// CHECK-NEXT: %y = graph.is_inf(%x0) {detect_negative = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT: func.return %y : tensor<2x3xi1>
// CHECK-NEXT: }

func.func @isnan(%x0: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %y = graph.is_nan(%x0) : (tensor<2x3xf32>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}
// CHECK-LABEL: func.func @isnan(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xi1> {
// CHECK-NEXT: %y = graph.is_nan(%x0) : (tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT: func.return %y : tensor<2x3xi1>
// CHECK-NEXT: }

func.func @lrn(%x0: tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32> {
  %y = graph.lrn(%x0) {size = 3 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  func.return %y : tensor<1x3x8x8xf32>
}
// CHECK-LABEL: func.func @lrn(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32> {
// CHECK-NEXT: %y = graph.lrn(%x0) {size = 3 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x8x8xf32>
// CHECK-NEXT: }

func.func @layernormalization(%x0: tensor<2x5x8xf32>, %x1: tensor<8xf32>, %x2: tensor<8xf32>) -> tensor<2x5x8xf32> {
  %y = graph.layer_normalization(%x0, %x1, %x2) {epsilon = 1.000000e-05 : f32} : (tensor<2x5x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  func.return %y : tensor<2x5x8xf32>
}
// CHECK-LABEL: func.func @layernormalization(
// CHECK-SAME: %x0: tensor<2x5x8xf32>, %x1: tensor<8xf32>, %x2: tensor<8xf32>) -> tensor<2x5x8xf32> {
// CHECK-NEXT: %y = graph.layer_normalization(%x0, %x1, %x2) {epsilon = 1.000000e-05 : f32} : (tensor<2x5x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
// CHECK-NEXT: func.return %y : tensor<2x5x8xf32>
// CHECK-NEXT: }

func.func @layernormalization_stats(%x0: tensor<2x5x8xf32>, %x1: tensor<5x8xf32>) -> (tensor<2x5x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) {
  %y0, %y1, %y2 = graph.layer_normalization(%x0, %x1) {axis = 1 : i64} : (tensor<2x5x8xf32>, tensor<5x8xf32>) -> (tensor<2x5x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  func.return %y0, %y1, %y2 : tensor<2x5x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>
}
// CHECK-LABEL: func.func @layernormalization_stats(
// CHECK-SAME: %x0: tensor<2x5x8xf32>, %x1: tensor<5x8xf32>) -> (tensor<2x5x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) {
// CHECK-NEXT: %y0, %y1, %y2 = graph.layer_normalization(%x0, %x1) {axis = 1 : i64} : (tensor<2x5x8xf32>, tensor<5x8xf32>) -> (tensor<2x5x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
// CHECK-NEXT: func.return %y0, %y1, %y2 : tensor<2x5x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>
// CHECK-NEXT: }

func.func @layernormalization_hole(%x0: tensor<2x5x8xf32>, %x1: tensor<8xf32>) -> (tensor<2x5x8xf32>, tensor<2x5x1xf32>) {
  %y0, %y1 = graph.layer_normalization(%x0, %x1) : (tensor<2x5x8xf32>, tensor<8xf32>) -> (tensor<2x5x8xf32>, none, tensor<2x5x1xf32>)
  func.return %y0, %y1 : tensor<2x5x8xf32>, tensor<2x5x1xf32>
}
// CHECK-LABEL: func.func @layernormalization_hole(
// CHECK-SAME: %x0: tensor<2x5x8xf32>, %x1: tensor<8xf32>) -> (tensor<2x5x8xf32>, tensor<2x5x1xf32>) {
// CHECK-NEXT: %y0, %y1 = graph.layer_normalization(%x0, %x1) : (tensor<2x5x8xf32>, tensor<8xf32>) -> (tensor<2x5x8xf32>, none, tensor<2x5x1xf32>)
// CHECK-NEXT: func.return %y0, %y1 : tensor<2x5x8xf32>, tensor<2x5x1xf32>
// CHECK-NEXT: }

func.func @leakyrelu(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.leaky_relu(%x0) {alpha = 1.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @leakyrelu(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.leaky_relu(%x0) {alpha = 1.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @less(%x0: tensor<2x3xf32>, %x1: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %y = graph.less(%x0, %x1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}
// CHECK-LABEL: func.func @less(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<2x3xf32>) -> tensor<2x3xi1> {
// CHECK-NEXT: %y = graph.less(%x0, %x1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT: func.return %y : tensor<2x3xi1>
// CHECK-NEXT: }

func.func @lessorequal(%x0: tensor<2x3xi32>, %x1: tensor<1xi32>) -> tensor<2x3xi1> {
  %y = graph.less_or_equal(%x0, %x1) : (tensor<2x3xi32>, tensor<1xi32>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}
// CHECK-LABEL: func.func @lessorequal(
// CHECK-SAME: %x0: tensor<2x3xi32>, %x1: tensor<1xi32>) -> tensor<2x3xi1> {
// CHECK-NEXT: %y = graph.less_or_equal(%x0, %x1) : (tensor<2x3xi32>, tensor<1xi32>) -> tensor<2x3xi1>
// CHECK-NEXT: func.return %y : tensor<2x3xi1>
// CHECK-NEXT: }

func.func @log(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.log(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @log(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.log(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @logsoftmax(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.log_softmax(%x0) {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @logsoftmax(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.log_softmax(%x0) {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @matmul(%x0: tensor<2x3x4xf32>, %x1: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %y = graph.matmul(%x0, %x1) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  func.return %y : tensor<2x3x5xf32>
}
// CHECK-LABEL: func.func @matmul(
// CHECK-SAME: %x0: tensor<2x3x4xf32>, %x1: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
// CHECK-NEXT: %y = graph.matmul(%x0, %x1) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT: func.return %y : tensor<2x3x5xf32>
// CHECK-NEXT: }

func.func @matmul_vec_mat(%x0: tensor<4xf32>, %x1: tensor<2x4x5xf32>) -> tensor<2x5xf32> {
  %y = graph.matmul(%x0, %x1) : (tensor<4xf32>, tensor<2x4x5xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}
// CHECK-LABEL: func.func @matmul_vec_mat(
// CHECK-SAME: %x0: tensor<4xf32>, %x1: tensor<2x4x5xf32>) -> tensor<2x5xf32> {
// CHECK-NEXT: %y = graph.matmul(%x0, %x1) : (tensor<4xf32>, tensor<2x4x5xf32>) -> tensor<2x5xf32>
// CHECK-NEXT: func.return %y : tensor<2x5xf32>
// CHECK-NEXT: }

func.func @matmul_batch_bcast(%x0: tensor<2x1x3x4xf32>, %x1: tensor<5x4x2xf32>) -> tensor<2x5x3x2xf32> {
  %y = graph.matmul(%x0, %x1) : (tensor<2x1x3x4xf32>, tensor<5x4x2xf32>) -> tensor<2x5x3x2xf32>
  func.return %y : tensor<2x5x3x2xf32>
}
// CHECK-LABEL: func.func @matmul_batch_bcast(
// CHECK-SAME: %x0: tensor<2x1x3x4xf32>, %x1: tensor<5x4x2xf32>) -> tensor<2x5x3x2xf32> {
// CHECK-NEXT: %y = graph.matmul(%x0, %x1) : (tensor<2x1x3x4xf32>, tensor<5x4x2xf32>) -> tensor<2x5x3x2xf32>
// CHECK-NEXT: func.return %y : tensor<2x5x3x2xf32>
// CHECK-NEXT: }

func.func @matmul_mat_vec(%x0: tensor<3x4xf32>, %x1: tensor<4xf32>) -> tensor<3xf32> {
  %y = graph.matmul(%x0, %x1) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
// CHECK-LABEL: func.func @matmul_mat_vec(
// CHECK-SAME: %x0: tensor<3x4xf32>, %x1: tensor<4xf32>) -> tensor<3xf32> {
// CHECK-NEXT: %y = graph.matmul(%x0, %x1) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
// CHECK-NEXT: func.return %y : tensor<3xf32>
// CHECK-NEXT: }

func.func @max(%x0: tensor<2x3xf32>, %x1: tensor<3xf32>, %x2: tensor<1x1xf32>) -> tensor<2x3xf32> {
  %y = graph.max(%x0, %x1, %x2) : (tensor<2x3xf32>, tensor<3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @max(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<3xf32>, %x2: tensor<1x1xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.max(%x0, %x1, %x2) : (tensor<2x3xf32>, tensor<3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @max_single(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.max(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @max_single(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.max(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @maxpool(%x0: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  %y = graph.max_pool(%x0) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}
// CHECK-LABEL: func.func @maxpool(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
// CHECK-NEXT: %y = graph.max_pool(%x0) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x4x4xf32>
// CHECK-NEXT: }

func.func @maxpool_indices(%x0: tensor<1x3x7x7xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xi64>) {
  %y0, %y1 = graph.max_pool(%x0) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x3x7x7xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xi64>)
  func.return %y0, %y1 : tensor<1x3x4x4xf32>, tensor<1x3x4x4xi64>
}
// CHECK-LABEL: func.func @maxpool_indices(
// CHECK-SAME: %x0: tensor<1x3x7x7xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xi64>) {
// CHECK-NEXT: %y0, %y1 = graph.max_pool(%x0) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x3x7x7xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xi64>)
// CHECK-NEXT: func.return %y0, %y1 : tensor<1x3x4x4xf32>, tensor<1x3x4x4xi64>
// CHECK-NEXT: }

func.func @maxpool_dil(%x0: tensor<1x3x9x9xf32>) -> tensor<1x3x5x5xf32> {
  %y = graph.max_pool(%x0) {kernel_shape = array<i64: 3, 3>, dilations = array<i64: 2, 2>, storage_order = 1 : i64} : (tensor<1x3x9x9xf32>) -> tensor<1x3x5x5xf32>
  func.return %y : tensor<1x3x5x5xf32>
}
// CHECK-LABEL: func.func @maxpool_dil(
// CHECK-SAME: %x0: tensor<1x3x9x9xf32>) -> tensor<1x3x5x5xf32> {
// CHECK-NEXT: %y = graph.max_pool(%x0) {kernel_shape = array<i64: 3, 3>, dilations = array<i64: 2, 2>, storage_order = 1 : i64} : (tensor<1x3x9x9xf32>) -> tensor<1x3x5x5xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x5x5xf32>
// CHECK-NEXT: }

func.func @maxpool_same(%x0: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  %y = graph.max_pool(%x0) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, auto_pad = "SAME_LOWER"} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}
// CHECK-LABEL: func.func @maxpool_same(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
// CHECK-NEXT: %y = graph.max_pool(%x0) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, auto_pad = "SAME_LOWER"} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x4x4xf32>
// CHECK-NEXT: }

func.func @mean(%x0: tensor<2x3xf32>, %x1: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.mean(%x0, %x1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @mean(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.mean(%x0, %x1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @min(%x0: tensor<2x3xf32>, %x1: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %y = graph.min(%x0, %x1) : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @min(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<1x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.min(%x0, %x1) : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @mish(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.mish(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @mish(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.mish(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @mod(%x0: tensor<2x3xi64>, %x1: tensor<3xi64>) -> tensor<2x3xi64> {
  %y = graph.mod(%x0, %x1) : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  func.return %y : tensor<2x3xi64>
}
// CHECK-LABEL: func.func @mod(
// CHECK-SAME: %x0: tensor<2x3xi64>, %x1: tensor<3xi64>) -> tensor<2x3xi64> {
// CHECK-NEXT: %y = graph.mod(%x0, %x1) : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT: func.return %y : tensor<2x3xi64>
// CHECK-NEXT: }

func.func @mod_fmod(%x0: tensor<2x3xf32>, %x1: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.mod(%x0, %x1) {fmod = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @mod_fmod(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.mod(%x0, %x1) {fmod = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @mul(%x0: tensor<2x3xf32>, %x1: tensor<1xf32>) -> tensor<2x3xf32> {
  %y = graph.mul(%x0, %x1) : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @mul(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<1xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.mul(%x0, %x1) : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @neg(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.neg(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @neg(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.neg(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @nonzero() -> tensor<2x3xi64> {
  %c0 = graph.constant dense<[[1.000000e+00, 0.000000e+00, 2.000000e+00], [0.000000e+00, 0.000000e+00, 3.000000e+00]]> : tensor<2x3xf32>
  %y = graph.non_zero(%c0) : (tensor<2x3xf32>) -> tensor<2x3xi64>
  func.return %y : tensor<2x3xi64>
}
// CHECK-LABEL: func.func @nonzero(
// CHECK-SAME: ) -> tensor<2x3xi64> {
// CHECK-NEXT: %c0 = graph.constant dense<{{\[\[}}1.000000e+00, 0.000000e+00, 2.000000e+00], [0.000000e+00, 0.000000e+00, 3.000000e+00]]> : tensor<2x3xf32>
// CHECK-NEXT: %y = graph.non_zero(%c0) : (tensor<2x3xf32>) -> tensor<2x3xi64>
// CHECK-NEXT: func.return %y : tensor<2x3xi64>
// CHECK-NEXT: }

func.func @not(%x0: tensor<2x3xi1>) -> tensor<2x3xi1> {
  %y = graph.not(%x0) : (tensor<2x3xi1>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}
// CHECK-LABEL: func.func @not(
// CHECK-SAME: %x0: tensor<2x3xi1>) -> tensor<2x3xi1> {
// CHECK-NEXT: %y = graph.not(%x0) : (tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: func.return %y : tensor<2x3xi1>
// CHECK-NEXT: }

func.func @or(%x0: tensor<2x3xi1>, %x1: tensor<2x3xi1>) -> tensor<2x3xi1> {
  %y = graph.or(%x0, %x1) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}
// CHECK-LABEL: func.func @or(
// CHECK-SAME: %x0: tensor<2x3xi1>, %x1: tensor<2x3xi1>) -> tensor<2x3xi1> {
// CHECK-NEXT: %y = graph.or(%x0, %x1) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: func.return %y : tensor<2x3xi1>
// CHECK-NEXT: }

func.func @prelu(%x0: tensor<1x3x8x8xf32>, %x1: tensor<3x1x1xf32>) -> tensor<1x3x8x8xf32> {
  %y = graph.prelu(%x0, %x1) : (tensor<1x3x8x8xf32>, tensor<3x1x1xf32>) -> tensor<1x3x8x8xf32>
  func.return %y : tensor<1x3x8x8xf32>
}
// CHECK-LABEL: func.func @prelu(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>, %x1: tensor<3x1x1xf32>) -> tensor<1x3x8x8xf32> {
// CHECK-NEXT: %y = graph.prelu(%x0, %x1) : (tensor<1x3x8x8xf32>, tensor<3x1x1xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x8x8xf32>
// CHECK-NEXT: }

func.func @pad(%x0: tensor<2x3xf32>) -> tensor<5x4xf32> {
  %c0 = graph.constant dense<[1, 0, 2, 1]> : tensor<4xi64>
  %y = graph.pad(%x0, %c0) {mode = "constant"} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<5x4xf32>
  func.return %y : tensor<5x4xf32>
}
// CHECK-LABEL: func.func @pad(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<5x4xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[1, 0, 2, 1]> : tensor<4xi64>
// CHECK-NEXT: %y = graph.pad(%x0, %c0) {mode = "constant"} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<5x4xf32>
// CHECK-NEXT: func.return %y : tensor<5x4xf32>
// CHECK-NEXT: }

func.func @pad_axes(%x0: tensor<2x3x4xf32>) -> tensor<2x3x7xf32> {
  %c0 = graph.constant dense<[1, 2]> : tensor<2xi64>
  %c1 = graph.constant dense<1.500000e+00> : tensor<f32>
  %c2 = graph.constant dense<-1> : tensor<1xi64>
  %y = graph.pad(%x0, %c0, %c1, %c2) {mode = "reflect"} : (tensor<2x3x4xf32>, tensor<2xi64>, tensor<f32>, tensor<1xi64>) -> tensor<2x3x7xf32>
  func.return %y : tensor<2x3x7xf32>
}
// CHECK-LABEL: func.func @pad_axes(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x3x7xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[1, 2]> : tensor<2xi64>
// CHECK-NEXT: %c1 = graph.constant dense<1.500000e+00> : tensor<f32>
// CHECK-NEXT: %c2 = graph.constant dense<-1> : tensor<1xi64>
// CHECK-NEXT: %y = graph.pad(%x0, %c0, %c1, %c2) {mode = "reflect"} : (tensor<2x3x4xf32>, tensor<2xi64>, tensor<f32>, tensor<1xi64>) -> tensor<2x3x7xf32>
// CHECK-NEXT: func.return %y : tensor<2x3x7xf32>
// CHECK-NEXT: }

func.func @pad_attr(%x0: tensor<2x3xf32>) -> tensor<2x5xf32> {
  %y = graph.pad(%x0) {pads = array<i64: 0, 1, 0, 1>, value = 2.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}
// CHECK-LABEL: func.func @pad_attr(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x5xf32> {
// CHECK-NEXT: %y = graph.pad(%x0) {pads = array<i64: 0, 1, 0, 1>, value = 2.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x5xf32>
// CHECK-NEXT: func.return %y : tensor<2x5xf32>
// CHECK-NEXT: }

func.func @pow(%x0: tensor<2x3xf32>, %x1: tensor<1xi64>) -> tensor<2x3xf32> {
  %y = graph.pow(%x0, %x1) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @pow(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<1xi64>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.pow(%x0, %x1) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @range() -> tensor<4xi64> {
  %c0 = graph.constant dense<0> : tensor<i64>
  %c1 = graph.constant dense<10> : tensor<i64>
  %c2 = graph.constant dense<3> : tensor<i64>
  %y = graph.range(%c0, %c1, %c2) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  func.return %y : tensor<4xi64>
}
// CHECK-LABEL: func.func @range(
// CHECK-SAME: ) -> tensor<4xi64> {
// CHECK-NEXT: %c0 = graph.constant dense<0> : tensor<i64>
// CHECK-NEXT: %c1 = graph.constant dense<10> : tensor<i64>
// CHECK-NEXT: %c2 = graph.constant dense<3> : tensor<i64>
// CHECK-NEXT: %y = graph.range(%c0, %c1, %c2) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
// CHECK-NEXT: func.return %y : tensor<4xi64>
// CHECK-NEXT: }

func.func @range_float() -> tensor<4xf32> {
  %c0 = graph.constant dense<1.000000e+00> : tensor<f32>
  %c1 = graph.constant dense<2.000000e+00> : tensor<f32>
  %c2 = graph.constant dense<2.500000e-01> : tensor<f32>
  %y = graph.range(%c0, %c1, %c2) : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK-LABEL: func.func @range_float(
// CHECK-SAME: ) -> tensor<4xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %c1 = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %c2 = graph.constant dense<2.500000e-01> : tensor<f32>
// CHECK-NEXT: %y = graph.range(%c0, %c1, %c2) : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT: func.return %y : tensor<4xf32>
// CHECK-NEXT: }

func.func @reciprocal(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.reciprocal(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @reciprocal(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.reciprocal(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @reducel1(%x0: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %c0 = graph.constant dense<1> : tensor<1xi64>
  %y = graph.reduce_l1(%x0, %c0) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x1x4xf32>
  func.return %y : tensor<2x1x4xf32>
}
// CHECK-LABEL: func.func @reducel1(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<1> : tensor<1xi64>
// CHECK-NEXT: %y = graph.reduce_l1(%x0, %c0) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x1x4xf32>
// CHECK-NEXT: func.return %y : tensor<2x1x4xf32>
// CHECK-NEXT: }

func.func @reducel2(%x0: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %c0 = graph.constant dense<1> : tensor<1xi64>
  %y = graph.reduce_l2(%x0, %c0) {keepdims = 0 : i64} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @reducel2(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<1> : tensor<1xi64>
// CHECK-NEXT: %y = graph.reduce_l2(%x0, %c0) {keepdims = 0 : i64} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x4xf32>
// CHECK-NEXT: func.return %y : tensor<2x4xf32>
// CHECK-NEXT: }

func.func @reducelogsum(%x0: tensor<2x3x4xf32>) -> tensor<1x1x1xf32> {
  %y = graph.reduce_log_sum(%x0) : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  func.return %y : tensor<1x1x1xf32>
}
// CHECK-LABEL: func.func @reducelogsum(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<1x1x1xf32> {
// CHECK-NEXT: %y = graph.reduce_log_sum(%x0) : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
// CHECK-NEXT: func.return %y : tensor<1x1x1xf32>
// CHECK-NEXT: }

func.func @reducelogsumexp(%x0: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %c0 = graph.constant dense<[0, 2]> : tensor<2xi64>
  %y = graph.reduce_log_sum_exp(%x0, %c0) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<1x3x1xf32>
  func.return %y : tensor<1x3x1xf32>
}
// CHECK-LABEL: func.func @reducelogsumexp(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[0, 2]> : tensor<2xi64>
// CHECK-NEXT: %y = graph.reduce_log_sum_exp(%x0, %c0) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<1x3x1xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x1xf32>
// CHECK-NEXT: }

func.func @reducemax(%x0: tensor<2x3x4xf32>) -> tensor<2x3x1xf32> {
  %c0 = graph.constant dense<-1> : tensor<1xi64>
  %y = graph.reduce_max(%x0, %c0) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x3x1xf32>
  func.return %y : tensor<2x3x1xf32>
}
// CHECK-LABEL: func.func @reducemax(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x3x1xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<-1> : tensor<1xi64>
// CHECK-NEXT: %y = graph.reduce_max(%x0, %c0) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x3x1xf32>
// CHECK-NEXT: func.return %y : tensor<2x3x1xf32>
// CHECK-NEXT: }

func.func @reducemax_attr(%x0: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %y = graph.reduce_max(%x0) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @reducemax_attr(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT: %y = graph.reduce_max(%x0) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: func.return %y : tensor<2x4xf32>
// CHECK-NEXT: }

func.func @reducemean(%x0: tensor<2x3x4xf32>) -> tensor<2x1x1xf32> {
  %c0 = graph.constant dense<[1, 2]> : tensor<2xi64>
  %y = graph.reduce_mean(%x0, %c0) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x1x1xf32>
  func.return %y : tensor<2x1x1xf32>
}
// CHECK-LABEL: func.func @reducemean(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x1x1xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[1, 2]> : tensor<2xi64>
// CHECK-NEXT: %y = graph.reduce_mean(%x0, %c0) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x1x1xf32>
// CHECK-NEXT: func.return %y : tensor<2x1x1xf32>
// CHECK-NEXT: }

func.func @reducemean_attr(%x0: tensor<2x3x4xf32>) -> tensor<2x3x1xf32> {
  %y = graph.reduce_mean(%x0) {axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  func.return %y : tensor<2x3x1xf32>
}
// CHECK-LABEL: func.func @reducemean_attr(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x3x1xf32> {
// CHECK-NEXT: %y = graph.reduce_mean(%x0) {axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT: func.return %y : tensor<2x3x1xf32>
// CHECK-NEXT: }

func.func @reducemean_noop(%x0: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %c0 = graph.constant dense<> : tensor<0xi64>
  %y = graph.reduce_mean(%x0, %c0) {noop_with_empty_axes = 1 : i64} : (tensor<2x3x4xf32>, tensor<0xi64>) -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}
// CHECK-LABEL: func.func @reducemean_noop(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<> : tensor<0xi64>
// CHECK-NEXT: %y = graph.reduce_mean(%x0, %c0) {noop_with_empty_axes = 1 : i64} : (tensor<2x3x4xf32>, tensor<0xi64>) -> tensor<2x3x4xf32>
// CHECK-NEXT: func.return %y : tensor<2x3x4xf32>
// CHECK-NEXT: }

func.func @reducemin(%x0: tensor<2x3x4xf32>) -> tensor<f32> {
  %y = graph.reduce_min(%x0) {keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<f32>
  func.return %y : tensor<f32>
}
// CHECK-LABEL: func.func @reducemin(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<f32> {
// CHECK-NEXT: %y = graph.reduce_min(%x0) {keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT: func.return %y : tensor<f32>
// CHECK-NEXT: }

func.func @reduceprod(%x0: tensor<2x3x4xf32>) -> tensor<1x3x4xf32> {
  %c0 = graph.constant dense<0> : tensor<1xi64>
  %y = graph.reduce_prod(%x0, %c0) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<1x3x4xf32>
  func.return %y : tensor<1x3x4xf32>
}
// CHECK-LABEL: func.func @reduceprod(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<1x3x4xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<0> : tensor<1xi64>
// CHECK-NEXT: %y = graph.reduce_prod(%x0, %c0) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<1x3x4xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x4xf32>
// CHECK-NEXT: }

func.func @reducesum(%x0: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %c0 = graph.constant dense<1> : tensor<1xi64>
  %y = graph.reduce_sum(%x0, %c0) {keepdims = 0 : i64} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @reducesum(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<1> : tensor<1xi64>
// CHECK-NEXT: %y = graph.reduce_sum(%x0, %c0) {keepdims = 0 : i64} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x4xf32>
// CHECK-NEXT: func.return %y : tensor<2x4xf32>
// CHECK-NEXT: }

func.func @reducesum_attr(%x0: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %y = graph.reduce_sum(%x0) {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  func.return %y : tensor<1x3x1xf32>
}
// CHECK-LABEL: func.func @reducesum_attr(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
// CHECK-NEXT: %y = graph.reduce_sum(%x0) {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x1xf32>
// CHECK-NEXT: }

func.func @reducesumsquare(%x0: tensor<2x3x4xf32>) -> tensor<2x3x1xf32> {
  %c0 = graph.constant dense<2> : tensor<1xi64>
  %y = graph.reduce_sum_square(%x0, %c0) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x3x1xf32>
  func.return %y : tensor<2x3x1xf32>
}
// CHECK-LABEL: func.func @reducesumsquare(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x3x1xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<2> : tensor<1xi64>
// CHECK-NEXT: %y = graph.reduce_sum_square(%x0, %c0) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x3x1xf32>
// CHECK-NEXT: func.return %y : tensor<2x3x1xf32>
// CHECK-NEXT: }

func.func @relu(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.relu(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @relu(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.relu(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @reshape(%x0: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %c0 = graph.constant dense<[0, -1]> : tensor<2xi64>
  %y = graph.reshape(%x0, %c0) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  func.return %y : tensor<2x12xf32>
}
// CHECK-LABEL: func.func @reshape(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[0, -1]> : tensor<2xi64>
// CHECK-NEXT: %y = graph.reshape(%x0, %c0) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
// CHECK-NEXT: func.return %y : tensor<2x12xf32>
// CHECK-NEXT: }

func.func @reshape_zero(%x0: tensor<2x3x4xf32>) -> tensor<4x3x2x1xf32> {
  %c0 = graph.constant dense<[4, 0, 2, -1]> : tensor<4xi64>
  %y = graph.reshape(%x0, %c0) : (tensor<2x3x4xf32>, tensor<4xi64>) -> tensor<4x3x2x1xf32>
  func.return %y : tensor<4x3x2x1xf32>
}
// CHECK-LABEL: func.func @reshape_zero(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<4x3x2x1xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[4, 0, 2, -1]> : tensor<4xi64>
// CHECK-NEXT: %y = graph.reshape(%x0, %c0) : (tensor<2x3x4xf32>, tensor<4xi64>) -> tensor<4x3x2x1xf32>
// CHECK-NEXT: func.return %y : tensor<4x3x2x1xf32>
// CHECK-NEXT: }

func.func @resize(%x0: tensor<1x3x8x8xf32>) -> tensor<1x3x16x16xf32> {
  %c0 = graph.constant dense<[1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<4xf32>
  %y = graph.resize(%x0, none, %c0) {mode = "nearest"} : (tensor<1x3x8x8xf32>, tensor<4xf32>) -> tensor<1x3x16x16xf32>
  func.return %y : tensor<1x3x16x16xf32>
}
// CHECK-LABEL: func.func @resize(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>) -> tensor<1x3x16x16xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK-NEXT: %y = graph.resize(%x0, none, %c0) {mode = "nearest"} : (tensor<1x3x8x8xf32>, tensor<4xf32>) -> tensor<1x3x16x16xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x16x16xf32>
// CHECK-NEXT: }

func.func @resize_sizes(%x0: tensor<1x3x8x8xf32>) -> tensor<1x3x5x7xf32> {
  %c0 = graph.constant dense<[1, 3, 5, 7]> : tensor<4xi64>
  %y = graph.resize(%x0, none, none, %c0) {mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x3x8x8xf32>, tensor<4xi64>) -> tensor<1x3x5x7xf32>
  func.return %y : tensor<1x3x5x7xf32>
}
// CHECK-LABEL: func.func @resize_sizes(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>) -> tensor<1x3x5x7xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[1, 3, 5, 7]> : tensor<4xi64>
// CHECK-NEXT: %y = graph.resize(%x0, none, none, %c0) {mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x3x8x8xf32>, tensor<4xi64>) -> tensor<1x3x5x7xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x5x7xf32>
// CHECK-NEXT: }

func.func @resize_axes(%x0: tensor<1x3x8x8xf32>) -> tensor<1x3x4x12xf32> {
  %c0 = graph.constant dense<[5.000000e-01, 1.500000e+00]> : tensor<2xf32>
  %y = graph.resize(%x0, none, %c0) {axes = array<i64: 2, 3>, mode = "cubic", cubic_coeff_a = -5.000000e-01 : f32} : (tensor<1x3x8x8xf32>, tensor<2xf32>) -> tensor<1x3x4x12xf32>
  func.return %y : tensor<1x3x4x12xf32>
}
// CHECK-LABEL: func.func @resize_axes(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>) -> tensor<1x3x4x12xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[5.000000e-01, 1.500000e+00]> : tensor<2xf32>
// CHECK-NEXT: %y = graph.resize(%x0, none, %c0) {axes = array<i64: 2, 3>, mode = "cubic", cubic_coeff_a = -5.000000e-01 : f32} : (tensor<1x3x8x8xf32>, tensor<2xf32>) -> tensor<1x3x4x12xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x4x12xf32>
// CHECK-NEXT: }

func.func @round(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.round(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @round(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.round(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @scatterelements(%x0: tensor<3x4xf32>, %x1: tensor<2x2xf32>) -> tensor<3x4xf32> {
  %c0 = graph.constant dense<[[0, 1], [2, 0]]> : tensor<2x2xi64>
  %y = graph.scatter_elements(%x0, %c0, %x1) {axis = 0 : i64, reduction = "add"} : (tensor<3x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}
// CHECK-LABEL: func.func @scatterelements(
// CHECK-SAME: %x0: tensor<3x4xf32>, %x1: tensor<2x2xf32>) -> tensor<3x4xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<{{\[\[}}0, 1], [2, 0]]> : tensor<2x2xi64>
// CHECK-NEXT: %y = graph.scatter_elements(%x0, %c0, %x1) {axis = 0 : i64, reduction = "add"} : (tensor<3x4xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: func.return %y : tensor<3x4xf32>
// CHECK-NEXT: }

func.func @scatternd(%x0: tensor<4x5xf32>, %x1: tensor<2x5xf32>) -> tensor<4x5xf32> {
  %c0 = graph.constant dense<[[1], [3]]> : tensor<2x1xi64>
  %y = graph.scatter_nd(%x0, %c0, %x1) : (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x5xf32>) -> tensor<4x5xf32>
  func.return %y : tensor<4x5xf32>
}
// CHECK-LABEL: func.func @scatternd(
// CHECK-SAME: %x0: tensor<4x5xf32>, %x1: tensor<2x5xf32>) -> tensor<4x5xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<{{\[\[}}1], [3]]> : tensor<2x1xi64>
// CHECK-NEXT: %y = graph.scatter_nd(%x0, %c0, %x1) : (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT: func.return %y : tensor<4x5xf32>
// CHECK-NEXT: }

func.func @selu(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.selu(%x0) {alpha = 1.670000e+00 : f32, gamma = 1.050000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @selu(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.selu(%x0) {alpha = 1.670000e+00 : f32, gamma = 1.050000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @shape(%x0: tensor<2x3x4xf32>) -> tensor<3xi64> {
  %y = graph.shape(%x0) : (tensor<2x3x4xf32>) -> tensor<3xi64>
  func.return %y : tensor<3xi64>
}
// CHECK-LABEL: func.func @shape(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<3xi64> {
// CHECK-NEXT: %y = graph.shape(%x0) : (tensor<2x3x4xf32>) -> tensor<3xi64>
// CHECK-NEXT: func.return %y : tensor<3xi64>
// CHECK-NEXT: }

func.func @shape_slice(%x0: tensor<2x3x4x5xf32>) -> tensor<2xi64> {
  %y = graph.shape(%x0) {start = 1 : i64, end = -1 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2xi64>
  func.return %y : tensor<2xi64>
}
// CHECK-LABEL: func.func @shape_slice(
// CHECK-SAME: %x0: tensor<2x3x4x5xf32>) -> tensor<2xi64> {
// CHECK-NEXT: %y = graph.shape(%x0) {start = 1 : i64, end = -1 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2xi64>
// CHECK-NEXT: func.return %y : tensor<2xi64>
// CHECK-NEXT: }

func.func @shrink(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.shrink(%x0) {bias = 5.000000e-01 : f32, lambd = 1.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @shrink(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.shrink(%x0) {bias = 5.000000e-01 : f32, lambd = 1.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @sigmoid(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.sigmoid(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @sigmoid(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.sigmoid(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @sign(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.sign(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @sign(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.sign(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @sin(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.sin(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @sin(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.sin(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @sinh(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.sinh(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @sinh(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.sinh(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @size(%x0: tensor<2x3xf32>) -> tensor<i64> {
  %y = graph.size(%x0) : (tensor<2x3xf32>) -> tensor<i64>
  func.return %y : tensor<i64>
}
// CHECK-LABEL: func.func @size(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<i64> {
// CHECK-NEXT: %y = graph.size(%x0) : (tensor<2x3xf32>) -> tensor<i64>
// CHECK-NEXT: func.return %y : tensor<i64>
// CHECK-NEXT: }

func.func @slice(%x0: tensor<5x6x7xf32>) -> tensor<2x6x2xf32> {
  %c0 = graph.constant dense<[1, 0]> : tensor<2xi64>
  %c1 = graph.constant dense<[4, -1]> : tensor<2xi64>
  %c2 = graph.constant dense<[0, 2]> : tensor<2xi64>
  %c3 = graph.constant dense<[2, 3]> : tensor<2xi64>
  %y = graph.slice(%x0, %c0, %c1, %c2, %c3) : (tensor<5x6x7xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x6x2xf32>
  func.return %y : tensor<2x6x2xf32>
}
// CHECK-LABEL: func.func @slice(
// CHECK-SAME: %x0: tensor<5x6x7xf32>) -> tensor<2x6x2xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[1, 0]> : tensor<2xi64>
// CHECK-NEXT: %c1 = graph.constant dense<[4, -1]> : tensor<2xi64>
// CHECK-NEXT: %c2 = graph.constant dense<[0, 2]> : tensor<2xi64>
// CHECK-NEXT: %c3 = graph.constant dense<[2, 3]> : tensor<2xi64>
// CHECK-NEXT: %y = graph.slice(%x0, %c0, %c1, %c2, %c3) : (tensor<5x6x7xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x6x2xf32>
// CHECK-NEXT: func.return %y : tensor<2x6x2xf32>
// CHECK-NEXT: }

func.func @slice_reverse(%x0: tensor<5x6xf32>) -> tensor<5x6xf32> {
  %c0 = graph.constant dense<-1> : tensor<1xi64>
  %c1 = graph.constant dense<-1000000000> : tensor<1xi64>
  %c2 = graph.constant dense<1> : tensor<1xi64>
  %c3 = graph.constant dense<-1> : tensor<1xi64>
  %y = graph.slice(%x0, %c0, %c1, %c2, %c3) : (tensor<5x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5x6xf32>
  func.return %y : tensor<5x6xf32>
}
// CHECK-LABEL: func.func @slice_reverse(
// CHECK-SAME: %x0: tensor<5x6xf32>) -> tensor<5x6xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<-1> : tensor<1xi64>
// CHECK-NEXT: %c1 = graph.constant dense<-1000000000> : tensor<1xi64>
// CHECK-NEXT: %c2 = graph.constant dense<1> : tensor<1xi64>
// CHECK-NEXT: %c3 = graph.constant dense<-1> : tensor<1xi64>
// CHECK-NEXT: %y = graph.slice(%x0, %c0, %c1, %c2, %c3) : (tensor<5x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5x6xf32>
// CHECK-NEXT: func.return %y : tensor<5x6xf32>
// CHECK-NEXT: }

func.func @slice_clamp(%x0: tensor<5x6xf32>) -> tensor<4x6xf32> {
  %c0 = graph.constant dense<1> : tensor<1xi64>
  %c1 = graph.constant dense<100> : tensor<1xi64>
  %y = graph.slice(%x0, %c0, %c1) : (tensor<5x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}
// CHECK-LABEL: func.func @slice_clamp(
// CHECK-SAME: %x0: tensor<5x6xf32>) -> tensor<4x6xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<1> : tensor<1xi64>
// CHECK-NEXT: %c1 = graph.constant dense<100> : tensor<1xi64>
// CHECK-NEXT: %y = graph.slice(%x0, %c0, %c1) : (tensor<5x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x6xf32>
// CHECK-NEXT: func.return %y : tensor<4x6xf32>
// CHECK-NEXT: }

func.func @slice_attr(%x0: tensor<5x6xf32>) -> tensor<5x2xf32> {
  %y = graph.slice(%x0) {starts = array<i64: 1>, ends = array<i64: 3>, axes = array<i64: 1>} : (tensor<5x6xf32>) -> tensor<5x2xf32>
  func.return %y : tensor<5x2xf32>
}
// CHECK-LABEL: func.func @slice_attr(
// CHECK-SAME: %x0: tensor<5x6xf32>) -> tensor<5x2xf32> {
// CHECK-NEXT: %y = graph.slice(%x0) {starts = array<i64: 1>, ends = array<i64: 3>, axes = array<i64: 1>} : (tensor<5x6xf32>) -> tensor<5x2xf32>
// CHECK-NEXT: func.return %y : tensor<5x2xf32>
// CHECK-NEXT: }

func.func @softmax(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.softmax(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.softmax(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @softplus(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.softplus(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @softplus(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.softplus(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @softsign(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.softsign(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @softsign(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.softsign(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @spacetodepth(%x0: tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32> {
  %y = graph.space_to_depth(%x0) {blocksize = 2 : i64} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
  func.return %y : tensor<1x8x2x3xf32>
}
// CHECK-LABEL: func.func @spacetodepth(
// CHECK-SAME: %x0: tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32> {
// CHECK-NEXT: %y = graph.space_to_depth(%x0) {blocksize = 2 : i64} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
// CHECK-NEXT: func.return %y : tensor<1x8x2x3xf32>
// CHECK-NEXT: }

func.func @split(%x0: tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>) {
  %c0 = graph.constant dense<[2, 4]> : tensor<2xi64>
  %y0, %y1 = graph.split(%x0, %c0) {axis = 1 : i64} : (tensor<2x6xf32>, tensor<2xi64>) -> (tensor<2x2xf32>, tensor<2x4xf32>)
  func.return %y0, %y1 : tensor<2x2xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: func.func @split(
// CHECK-SAME: %x0: tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>) {
// CHECK-NEXT: %c0 = graph.constant dense<[2, 4]> : tensor<2xi64>
// CHECK-NEXT: %y0, %y1 = graph.split(%x0, %c0) {axis = 1 : i64} : (tensor<2x6xf32>, tensor<2xi64>) -> (tensor<2x2xf32>, tensor<2x4xf32>)
// CHECK-NEXT: func.return %y0, %y1 : tensor<2x2xf32>, tensor<2x4xf32>
// CHECK-NEXT: }

func.func @split_uneven(%x0: tensor<7x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<1x2xf32>) {
  %y0, %y1, %y2 = graph.split(%x0) {num_outputs = 3 : i64} : (tensor<7x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<1x2xf32>)
  func.return %y0, %y1, %y2 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<1x2xf32>
}
// CHECK-LABEL: func.func @split_uneven(
// CHECK-SAME: %x0: tensor<7x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<1x2xf32>) {
// CHECK-NEXT: %y0, %y1, %y2 = graph.split(%x0) {num_outputs = 3 : i64} : (tensor<7x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<1x2xf32>)
// CHECK-NEXT: func.return %y0, %y1, %y2 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<1x2xf32>
// CHECK-NEXT: }

func.func @split_attr(%x0: tensor<6x2xf32>) -> (tensor<1x2xf32>, tensor<5x2xf32>) {
  %y0, %y1 = graph.split(%x0) {split = array<i64: 1, 5>} : (tensor<6x2xf32>) -> (tensor<1x2xf32>, tensor<5x2xf32>)
  func.return %y0, %y1 : tensor<1x2xf32>, tensor<5x2xf32>
}
// CHECK-LABEL: func.func @split_attr(
// CHECK-SAME: %x0: tensor<6x2xf32>) -> (tensor<1x2xf32>, tensor<5x2xf32>) {
// CHECK-NEXT: %y0, %y1 = graph.split(%x0) {split = array<i64: 1, 5>} : (tensor<6x2xf32>) -> (tensor<1x2xf32>, tensor<5x2xf32>)
// CHECK-NEXT: func.return %y0, %y1 : tensor<1x2xf32>, tensor<5x2xf32>
// CHECK-NEXT: }

func.func @sqrt(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.sqrt(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @sqrt(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.sqrt(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @squeeze(%x0: tensor<1x3x1x2xf32>) -> tensor<3x2xf32> {
  %c0 = graph.constant dense<[0, -2]> : tensor<2xi64>
  %y = graph.squeeze(%x0, %c0) : (tensor<1x3x1x2xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @squeeze(
// CHECK-SAME: %x0: tensor<1x3x1x2xf32>) -> tensor<3x2xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[0, -2]> : tensor<2xi64>
// CHECK-NEXT: %y = graph.squeeze(%x0, %c0) : (tensor<1x3x1x2xf32>, tensor<2xi64>) -> tensor<3x2xf32>
// CHECK-NEXT: func.return %y : tensor<3x2xf32>
// CHECK-NEXT: }

func.func @squeeze_all(%x0: tensor<1x3x1x2xf32>) -> tensor<3x2xf32> {
  %y = graph.squeeze(%x0) : (tensor<1x3x1x2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @squeeze_all(
// CHECK-SAME: %x0: tensor<1x3x1x2xf32>) -> tensor<3x2xf32> {
// CHECK-NEXT: %y = graph.squeeze(%x0) : (tensor<1x3x1x2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: func.return %y : tensor<3x2xf32>
// CHECK-NEXT: }

func.func @squeeze_attr(%x0: tensor<1x3x1x2xf32>) -> tensor<1x3x2xf32> {
  %y = graph.squeeze(%x0) {axes = array<i64: 2>} : (tensor<1x3x1x2xf32>) -> tensor<1x3x2xf32>
  func.return %y : tensor<1x3x2xf32>
}
// CHECK-LABEL: func.func @squeeze_attr(
// CHECK-SAME: %x0: tensor<1x3x1x2xf32>) -> tensor<1x3x2xf32> {
// CHECK-NEXT: %y = graph.squeeze(%x0) {axes = array<i64: 2>} : (tensor<1x3x1x2xf32>) -> tensor<1x3x2xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x2xf32>
// CHECK-NEXT: }

func.func @sub(%x0: tensor<2x3xf32>, %x1: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.sub(%x0, %x1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @sub(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.sub(%x0, %x1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @sum(%x0: tensor<2x3xf32>, %x1: tensor<3xf32>, %x2: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %y = graph.sum(%x0, %x1, %x2) : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @sum(
// CHECK-SAME: %x0: tensor<2x3xf32>, %x1: tensor<3xf32>, %x2: tensor<2x1xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.sum(%x0, %x1, %x2) : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @tan(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.tan(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @tan(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.tan(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @tanh(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.tanh(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @tanh(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.tanh(%x0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @thresholdedrelu(%x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.thresholded_relu(%x0) {alpha = 5.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @thresholdedrelu(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.thresholded_relu(%x0) {alpha = 5.000000e-01 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @tile(%x0: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %c0 = graph.constant dense<[2, 1]> : tensor<2xi64>
  %y = graph.tile(%x0, %c0) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
  func.return %y : tensor<4x3xf32>
}
// CHECK-LABEL: func.func @tile(
// CHECK-SAME: %x0: tensor<2x3xf32>) -> tensor<4x3xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[2, 1]> : tensor<2xi64>
// CHECK-NEXT: %y = graph.tile(%x0, %c0) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
// CHECK-NEXT: func.return %y : tensor<4x3xf32>
// CHECK-NEXT: }

func.func @topk(%x0: tensor<3x10xf32>) -> (tensor<3x4xf32>, tensor<3x4xi64>) {
  %c0 = graph.constant dense<4> : tensor<1xi64>
  %y0, %y1 = graph.top_k(%x0, %c0) {axis = 1 : i64, largest = 0 : i64, sorted = 1 : i64} : (tensor<3x10xf32>, tensor<1xi64>) -> (tensor<3x4xf32>, tensor<3x4xi64>)
  func.return %y0, %y1 : tensor<3x4xf32>, tensor<3x4xi64>
}
// CHECK-LABEL: func.func @topk(
// CHECK-SAME: %x0: tensor<3x10xf32>) -> (tensor<3x4xf32>, tensor<3x4xi64>) {
// CHECK-NEXT: %c0 = graph.constant dense<4> : tensor<1xi64>
// CHECK-NEXT: %y0, %y1 = graph.top_k(%x0, %c0) {axis = 1 : i64, largest = 0 : i64, sorted = 1 : i64} : (tensor<3x10xf32>, tensor<1xi64>) -> (tensor<3x4xf32>, tensor<3x4xi64>)
// CHECK-NEXT: func.return %y0, %y1 : tensor<3x4xf32>, tensor<3x4xi64>
// CHECK-NEXT: }

func.func @topk_attr(%x0: tensor<3x10xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>) {
  %y0, %y1 = graph.top_k(%x0) {k = 2 : i64} : (tensor<3x10xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  func.return %y0, %y1 : tensor<3x2xf32>, tensor<3x2xi64>
}
// CHECK-LABEL: func.func @topk_attr(
// CHECK-SAME: %x0: tensor<3x10xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>) {
// CHECK-NEXT: %y0, %y1 = graph.top_k(%x0) {k = 2 : i64} : (tensor<3x10xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
// CHECK-NEXT: func.return %y0, %y1 : tensor<3x2xf32>, tensor<3x2xi64>
// CHECK-NEXT: }

func.func @transpose(%x0: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %y = graph.transpose(%x0) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  func.return %y : tensor<4x2x3xf32>
}
// CHECK-LABEL: func.func @transpose(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
// CHECK-NEXT: %y = graph.transpose(%x0) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: func.return %y : tensor<4x2x3xf32>
// CHECK-NEXT: }

func.func @transpose_reverse(%x0: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %y = graph.transpose(%x0) : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  func.return %y : tensor<4x3x2xf32>
}
// CHECK-LABEL: func.func @transpose_reverse(
// CHECK-SAME: %x0: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
// CHECK-NEXT: %y = graph.transpose(%x0) : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
// CHECK-NEXT: func.return %y : tensor<4x3x2xf32>
// CHECK-NEXT: }

func.func @trilu(%x0: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %c0 = graph.constant dense<1> : tensor<i64>
  %y = graph.trilu(%x0, %c0) {upper = 0 : i64} : (tensor<3x4xf32>, tensor<i64>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}
// CHECK-LABEL: func.func @trilu(
// CHECK-SAME: %x0: tensor<3x4xf32>) -> tensor<3x4xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<1> : tensor<i64>
// CHECK-NEXT: %y = graph.trilu(%x0, %c0) {upper = 0 : i64} : (tensor<3x4xf32>, tensor<i64>) -> tensor<3x4xf32>
// CHECK-NEXT: func.return %y : tensor<3x4xf32>
// CHECK-NEXT: }

func.func @unsqueeze(%x0: tensor<3x4xf32>) -> tensor<1x3x4x1xf32> {
  %c0 = graph.constant dense<[0, -1]> : tensor<2xi64>
  %y = graph.unsqueeze(%x0, %c0) : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<1x3x4x1xf32>
  func.return %y : tensor<1x3x4x1xf32>
}
// CHECK-LABEL: func.func @unsqueeze(
// CHECK-SAME: %x0: tensor<3x4xf32>) -> tensor<1x3x4x1xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[0, -1]> : tensor<2xi64>
// CHECK-NEXT: %y = graph.unsqueeze(%x0, %c0) : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<1x3x4x1xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x4x1xf32>
// CHECK-NEXT: }

func.func @unsqueeze_attr(%x0: tensor<3x4xf32>) -> tensor<3x1x4xf32> {
  %y = graph.unsqueeze(%x0) {axes = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<3x1x4xf32>
  func.return %y : tensor<3x1x4xf32>
}
// CHECK-LABEL: func.func @unsqueeze_attr(
// CHECK-SAME: %x0: tensor<3x4xf32>) -> tensor<3x1x4xf32> {
// CHECK-NEXT: %y = graph.unsqueeze(%x0) {axes = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<3x1x4xf32>
// CHECK-NEXT: func.return %y : tensor<3x1x4xf32>
// CHECK-NEXT: }

func.func @upsample(%x0: tensor<1x3x8x8xf32>) -> tensor<1x3x16x16xf32> {
  %c0 = graph.constant dense<[1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<4xf32>
  %y = graph.upsample(%x0, %c0) {mode = "nearest"} : (tensor<1x3x8x8xf32>, tensor<4xf32>) -> tensor<1x3x16x16xf32>
  func.return %y : tensor<1x3x16x16xf32>
}
// CHECK-LABEL: func.func @upsample(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>) -> tensor<1x3x16x16xf32> {
// CHECK-NEXT: %c0 = graph.constant dense<[1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK-NEXT: %y = graph.upsample(%x0, %c0) {mode = "nearest"} : (tensor<1x3x8x8xf32>, tensor<4xf32>) -> tensor<1x3x16x16xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x16x16xf32>
// CHECK-NEXT: }

func.func @upsample_attr(%x0: tensor<1x3x8x8xf32>) -> tensor<1x3x16x24xf32> {
  %y = graph.upsample(%x0) {scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x16x24xf32>
  func.return %y : tensor<1x3x16x24xf32>
}
// CHECK-LABEL: func.func @upsample_attr(
// CHECK-SAME: %x0: tensor<1x3x8x8xf32>) -> tensor<1x3x16x24xf32> {
// CHECK-NEXT: %y = graph.upsample(%x0) {scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x16x24xf32>
// CHECK-NEXT: func.return %y : tensor<1x3x16x24xf32>
// CHECK-NEXT: }

func.func @where(%x0: tensor<2x1xi1>, %x1: tensor<2x3xf32>, %x2: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = graph.where(%x0, %x1, %x2) : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @where(
// CHECK-SAME: %x0: tensor<2x1xi1>, %x1: tensor<2x3xf32>, %x2: tensor<3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: %y = graph.where(%x0, %x1, %x2) : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

func.func @xor(%x0: tensor<2x3xi1>, %x1: tensor<1x3xi1>) -> tensor<2x3xi1> {
  %y = graph.xor(%x0, %x1) : (tensor<2x3xi1>, tensor<1x3xi1>) -> tensor<2x3xi1>
  func.return %y : tensor<2x3xi1>
}
// CHECK-LABEL: func.func @xor(
// CHECK-SAME: %x0: tensor<2x3xi1>, %x1: tensor<1x3xi1>) -> tensor<2x3xi1> {
// CHECK-NEXT: %y = graph.xor(%x0, %x1) : (tensor<2x3xi1>, tensor<1x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: func.return %y : tensor<2x3xi1>
// CHECK-NEXT: }

{-#
  dialect_resources: {
    builtin: {
      graph_rt_w: "0x040000000000803f000000400000404000008040"
    }
  }
#-}
