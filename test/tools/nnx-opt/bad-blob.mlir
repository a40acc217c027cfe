// A blob whose alignment header is not hex is rejected, not read shifted by a byte.
// RUN: not nnx-opt %s 2>&1 | FileCheck %s
// CHECK: bad-blob.mlir: error: resource 'b': blob must start with a 4-byte power-of-two alignment
func.func @f() -> tensor<1xf32> {
  %c = graph.constant dense_resource<b> : tensor<1xf32>
  func.return %c : tensor<1xf32>
}
{-#
  dialect_resources: {
    builtin: {
      b: "0xZZ04000000803f00"
    }
  }
#-}
