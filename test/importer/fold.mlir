// Shape computations over a statically shaped graph fold to constants: Shape,
// Gather, Unsqueeze, Concat, Equal, ConstantOfShape, Where, Range, Cast.
// RUN: rm -rf %t && %python %S/make_models.py %t
// RUN: nnx-import %t/shape_chain.onnx --batch 3 | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME:    tensor<3x2x4xf32> {nnx.name = "x"}
// CHECK-SAME:    -> (tensor<3x8xf32> {nnx.name = "y"}, tensor<2xi64> {nnx.name = "shp3"}, tensor<2xf32> {nnx.name = "rngf"})
// CHECK-NOT:   graph.shape
// CHECK-NOT:   graph.gather
// CHECK-NOT:   graph.concat
// CHECK-NOT:   graph.constant_of_shape
// CHECK-NOT:   graph.where
// CHECK-NOT:   graph.range
// CHECK:       %[[R:.*]] = graph.relu
// CHECK-NEXT:  %[[S:.*]] = graph.constant dense<[3, -1]> : tensor<2xi64> loc("shp")
// CHECK-NEXT:  graph.reshape(%[[R]], %[[S]]) {{.*}} -> tensor<3x8xf32> loc("reshape")
// CHECK:       graph.constant dense<[6, 2]> : tensor<2xi64> loc("shp3")
// CHECK-NEXT:  graph.constant dense<[0.000000e+00, 1.000000e+00]> : tensor<2xf32> loc("rngf")
// CHECK-NEXT:  func.return
