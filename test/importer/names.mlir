// The importer keeps ONNX graph input/output names as `nnx.name` argument/result
// attributes and node (or initializer) names as op locations; --batch fixes the
// dynamic batch dim 'N'; large initializers are dense_resource blobs, small inline.
// RUN: rm -rf %t && %python %S/make_models.py %t
// RUN: nnx-import %t/mlp.onnx --batch 2 | FileCheck %s
// RUN: nnx-import %t/mlp.onnx --input-shape image=5x3x8x8 -o %t/mlp.mlir && FileCheck %s --check-prefix=SHAPE < %t/mlp.mlir
// RUN: nnx-import %t/mlp.onnx --batch 1 --no-locations | FileCheck %s --check-prefix=NOLOC

// CHECK:      func.func @main(%[[X:.*]]: tensor<2x3x8x8xf32> {nnx.name = "image"} loc("image")) -> (tensor<2x4x8x8xf32> {nnx.name = "features"})
// CHECK-NEXT:   %[[W:.*]] = graph.constant dense_resource<w{{.*}}> : tensor<4x3x3x3xf32> loc("w")
// CHECK-NEXT:   %[[B:.*]] = graph.constant dense<0.000000e+00> : tensor<4xf32> loc("b")
// CHECK-NEXT:   %[[C:.*]] = graph.conv(%[[X]], %[[W]], %[[B]]) {pads = array<i64: 1, 1, 1, 1>} : {{.*}} -> tensor<2x4x8x8xf32> loc("stem/conv")
// CHECK-NEXT:   %[[R:.*]] = graph.relu(%[[C]]) {{.*}} loc("stem/relu")
// CHECK-NEXT:   %[[A:.*]] = graph.add(%[[R]], %[[R]]) {{.*}} loc("stem/add")
// CHECK-NEXT:   func.return %[[A]] : tensor<2x4x8x8xf32>
// CHECK:      dialect_resources
// CHECK-NEXT:   builtin: {
// CHECK-NEXT:     w{{.*}}: "0x04000000

// SHAPE: func.func @main(%{{.*}}: tensor<5x3x8x8xf32> {nnx.name = "image"}{{.*}}-> (tensor<5x4x8x8xf32> {nnx.name = "features"})

// NOLOC-NOT: loc(
