// nnx-opt's generic form must be valid MLIR: mlir-opt-19 reads it (graph ops are
// unregistered there), including properties, dense_resource blobs and their
// resource section, `after` operands, regions (graph.subgraph) and locations; and
// nnx-opt reads mlir-opt-19's output back.
// Install: apt-get install -y --no-install-recommends mlir-19-tools

// REQUIRES: mlir-opt
// RUN: nnx-opt --print-op-generic %s | mlir-opt-19 --allow-unregistered-dialect | FileCheck %s
// RUN: nnx-opt --print-op-generic --mlir-print-debuginfo %s | mlir-opt-19 --allow-unregistered-dialect --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// RUN: nnx-opt --print-op-generic -p graph-fold-constants %s | mlir-opt-19 --allow-unregistered-dialect | FileCheck %s --check-prefix=FOLD
// RUN: nnx-opt --print-op-generic %s | mlir-opt-19 --allow-unregistered-dialect --mlir-print-op-generic | nnx-opt | FileCheck %s --check-prefix=BACK

// CHECK:       func.func @main(%arg0: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x1x2x2xf32>)
// CHECK:         "graph.constant"() <{value = dense_resource<weights> : tensor<1x2x3x4xf32>}>
// CHECK:         "graph.subgraph"(%{{.*}}) ({
// CHECK:         "graph.yield"
// CHECK:         "graph.conv"({{.*}}) <{group = 1 : i64, kernel_shape = array<i64: 2, 3>, operandSegmentSizes = array<i32: 1, 1, 0, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}>
// CHECK:       {-#
// CHECK:         weights: "0x04000000

// LOC: loc("{{.*}}mlir-opt-compat.mlir":[[# @LINE + 11]]:5)

// FOLD: "graph.constant"() <{value = dense_resource<{{.*}}> : tensor<1x2x3x4xf32>}>

// BACK: %{{.*}} = graph.conv(%{{.*}}, %{{.*}}) {group = 1 : i64, kernel_shape = array<i64: 2, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} after(%{{.*}} : tensor<1x2x3x4xf32>)
// BACK: weights: "0x04000000

func.func @main(%x: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x1x2x2xf32>) {
  %w = graph.constant dense_resource<weights> : tensor<1x2x3x4xf32>
  %s = graph.add(%x, %w) : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %o = graph.subgraph(%a = %s) : (tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>) {
    %r = graph.relu(%a) : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
    graph.yield %r : tensor<1x2x3x4xf32>
  }
  %k = graph.constant dense<[[[[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]]]> : tensor<1x2x2x3xf32>
  %c = graph.conv(%o, %k) {group = 1 : i64, kernel_shape = array<i64: 2, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} after(%s : tensor<1x2x3x4xf32>) : (tensor<1x2x3x4xf32>, tensor<1x2x2x3xf32>) -> tensor<1x1x2x2xf32>
  %f = graph.relu(%w) : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  func.return %f, %c : tensor<1x2x3x4xf32>, tensor<1x1x2x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weights: "0x040000000000c0bf0000b0bf0000a0bf000090bf000080bf000060bf000040bf000020bf000000bf0000c0be000080be000000be000000000000003e0000803e0000c03e0000003f0000203f0000403f0000603f0000803f0000903f0000a03f0000b03f"
    }
  }
#-}
