// Folded NaN/Inf values survive the generic form: they go to blobs, not bare hex
// (which xDSL's parser would read back as an integer).
// RUN: nnx-opt %s -p graph-fold-constants --print-op-generic | nnx-opt | FileCheck %s
// CHECK: graph.constant dense_resource<{{.*}}> : tensor<2xf32>
// CHECK: "0x040000000000807f0000c0ff"
func.func @f() -> tensor<2xf32> {
  %a = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %b = graph.constant dense<[0.0, 0.0]> : tensor<2xf32>
  %c = graph.div(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %c : tensor<2xf32>
}
