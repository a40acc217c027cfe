// An opset-11 Split with the `split` attribute imports (the attribute became an
// input in opset 13); --print-op-generic prints MLIR generic form.
// RUN: rm -rf %t && %python %S/make_models.py %t
// RUN: nnx-import %t/split_v11.onnx | FileCheck %s
// RUN: nnx-import %t/split_v11.onnx --print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK: %{{.*}}, %{{.*}} = graph.split(%{{.*}}) {{.*}}-> (tensor<2x1xf32>, tensor<2x3xf32>) loc("split")

// GENERIC: "func.func"() <{sym_name = "main"
// GENERIC: = "graph.split"(%{{.*}}) <{
// GENERIC-SAME: (tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x3xf32>) loc("split")
