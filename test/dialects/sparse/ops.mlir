// The sparse dialect (docs/sparse-mapping.md, section 4): every op and the connection-data type round-trip
// through the custom and the generic form.

// RUN: nnx-opt %s | FileCheck %s
// RUN: nnx-opt %s | nnx-opt | FileCheck %s
// RUN: nnx-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: nnx-opt %s --mlir-print-op-generic | nnx-opt | FileCheck %s

// CHECK-LABEL: func.func @connection_data
// CHECK-NEXT:    %wc = sparse.connect %w {threshold = 5.000000e-01 : f64} : tensor<4x8xf32> -> !sparse.conn<direct, 4x8, per_output>
// CHECK-NEXT:    %ws = sparse.convert %wc : !sparse.conn<direct, 4x8, per_output> -> !sparse.conn<stride, 4x8, per_output>
// CHECK-NEXT:    %wi = sparse.convert %ws : !sparse.conn<stride, 4x8, per_output> -> !sparse.conn<stride, 8x4, per_input>
// CHECK-NEXT:    %nc = sparse.connect %x {threshold = 0.000000e+00 : f64} : tensor<2x8xf32> -> !sparse.conn<stride, 2x8, neuron>
// CHECK-NEXT:    %c = sparse.combine %nc, %wc : !sparse.conn<stride, 2x8, neuron>, !sparse.conn<direct, 4x8, per_output> -> !sparse.conn<direct, 2x4x8, per_output>
// CHECK-NEXT:    %cs = sparse.combine %nc, %ws : !sparse.conn<stride, 2x8, neuron>, !sparse.conn<stride, 4x8, per_output> -> !sparse.conn<stride, 2x4x8, per_output>
// CHECK-NEXT:    %pn, %pw = sparse.select %c, %x, %w : !sparse.conn<direct, 2x4x8, per_output>, tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x4x8xf32>, tensor<2x4x8xf32>
// CHECK-NEXT:    %g = sparse.group_prune %x {groups = 2 : i64, threshold = 1.000000e-01 : f64, count_threshold = 1 : i64, axis = 1 : i64} after(%pn : tensor<2x4x8xf32>) : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    %b2 = sparse.connect %b {threshold = 2.500000e-01 : f64, layout = "in_out"} : tensor<8x4xf32> -> !sparse.conn<direct, 8x4, per_input>

// GENERIC: %wc = "sparse.connect"(%w) <{threshold = 5.000000e-01 : f64}> : (tensor<4x8xf32>) -> !sparse.conn<direct, 4x8, per_output>
// GENERIC: %c = "sparse.combine"(%nc, %wc) : (!sparse.conn<stride, 2x8, neuron>, !sparse.conn<direct, 4x8, per_output>) -> !sparse.conn<direct, 2x4x8, per_output>
// GENERIC: %g = "sparse.group_prune"(%x, %pn) <{groups = 2 : i64, threshold = 1.000000e-01 : f64, count_threshold = 1 : i64, axis = 1 : i64}> : (tensor<2x8xf32>, tensor<2x4x8xf32>) -> tensor<2x8xf32>
func.func @connection_data(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<2x8xf32> {
  %wc = sparse.connect %w {threshold = 0.5 : f64} : tensor<4x8xf32> -> !sparse.conn<direct, 4x8, per_output>
  %ws = sparse.convert %wc : !sparse.conn<direct, 4x8, per_output> -> !sparse.conn<stride, 4x8, per_output>
  %wi = sparse.convert %ws : !sparse.conn<stride, 4x8, per_output> -> !sparse.conn<stride, 8x4, per_input>
  %nc = sparse.connect %x {threshold = 0.0 : f64} : tensor<2x8xf32> -> !sparse.conn<stride, 2x8, neuron>
  %c = sparse.combine %nc, %wc : !sparse.conn<stride, 2x8, neuron>, !sparse.conn<direct, 4x8, per_output> -> !sparse.conn<direct, 2x4x8, per_output>
  %cs = sparse.combine %nc, %ws : !sparse.conn<stride, 2x8, neuron>, !sparse.conn<stride, 4x8, per_output> -> !sparse.conn<stride, 2x4x8, per_output>
  %pn, %pw = sparse.select %c, %x, %w : !sparse.conn<direct, 2x4x8, per_output>, tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %g = sparse.group_prune %x {groups = 2 : i64, threshold = 0.1 : f64, count_threshold = 1 : i64, axis = 1 : i64} after(%pn : tensor<2x4x8xf32>) : tensor<2x8xf32> -> tensor<2x8xf32>
  %b2 = sparse.connect %b {threshold = 0.25 : f64, layout = "in_out"} : tensor<8x4xf32> -> !sparse.conn<direct, 8x4, per_input>
  func.return %g : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @compute
// CHECK-NEXT:    %y = sparse.fc(%x, %w, %bias) conn(%c) : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>), !sparse.conn<direct, 2x4x8, per_output> -> tensor<2x4xf32>
// CHECK-NEXT:    %y2 = sparse.fc(%x, %w) conn(%wi) after(%y : tensor<2x4xf32>) : (tensor<2x8xf32>, tensor<4x8xf32>), !sparse.conn<stride, 8x4, per_input> -> tensor<2x4xf32>
// CHECK-NEXT:    %m = sparse.matmul(%x, %b) conn(%bc) : (tensor<2x8xf32>, tensor<8x4xf32>), !sparse.conn<direct, 8x4, per_input> -> tensor<2x4xf32>
// CHECK-NEXT:    %v = sparse.conv(%img, %k, %kb) conn(%kc) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>), !sparse.conn<stride, 4x27, per_output> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %v1 = sparse.conv(%seq, %k1) conn(%k1c) : (tensor<1x2x10xf32>, tensor<3x2x3xf32>), !sparse.conn<direct, 6x3, per_input> -> tensor<1x3x8xf32>

// GENERIC: "sparse.fc"(%x, %w, %bias, %c) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}>
// GENERIC: "sparse.fc"(%x, %w, %wi, %y) <{operandSegmentSizes = array<i32: 1, 1, 0, 1, 1>}>
func.func @compute(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %bias: tensor<4xf32>, %c: !sparse.conn<direct, 2x4x8, per_output>,
                   %wi: !sparse.conn<stride, 8x4, per_input>, %b: tensor<8x4xf32>, %bc: !sparse.conn<direct, 8x4, per_input>,
                   %img: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>, %kb: tensor<4xf32>, %kc: !sparse.conn<stride, 4x27, per_output>,
                   %seq: tensor<1x2x10xf32>, %k1: tensor<3x2x3xf32>, %k1c: !sparse.conn<direct, 6x3, per_input>) -> tensor<2x4xf32> {
  %y = sparse.fc(%x, %w, %bias) conn(%c) : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>), !sparse.conn<direct, 2x4x8, per_output> -> tensor<2x4xf32>
  %y2 = sparse.fc(%x, %w) conn(%wi) after(%y : tensor<2x4xf32>) : (tensor<2x8xf32>, tensor<4x8xf32>), !sparse.conn<stride, 8x4, per_input> -> tensor<2x4xf32>
  %m = sparse.matmul(%x, %b) conn(%bc) : (tensor<2x8xf32>, tensor<8x4xf32>), !sparse.conn<direct, 8x4, per_input> -> tensor<2x4xf32>
  %v = sparse.conv(%img, %k, %kb) conn(%kc) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>), !sparse.conn<stride, 4x27, per_output> -> tensor<1x4x4x4xf32>
  %v1 = sparse.conv(%seq, %k1) conn(%k1c) : (tensor<1x2x10xf32>, tensor<3x2x3xf32>), !sparse.conn<direct, 6x3, per_input> -> tensor<1x3x8xf32>
  func.return %y2 : tensor<2x4xf32>
}
