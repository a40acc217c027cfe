// graph-autodiff: which float constants are parameters. By default every name but the
// exporter's node outputs (starting with "/": Constant nodes and constants the importer
// folded, such as an attention scale); unnamed constants and "onnx::Conv_12"-style
// names (weights an inference export fused with a BatchNormalization) are parameters;
// with params=<regex>, exactly the names fully matching the regex.

// RUN: nnx-opt %s -p graph-autodiff | FileCheck %s
// RUN: nnx-opt %s -p 'graph-autodiff{params="fc[.].*|/scale/.*"}' | FileCheck %s --check-prefix=RE
// RUN: nnx-opt %s -p 'graph-autodiff{params="fc[.]weight"}' | FileCheck %s --check-prefix=ONE
// RUN: not nnx-opt %s -p 'graph-autodiff{params="fc("}' 2>&1 | FileCheck %s --check-prefix=BAD

// Default: fc.weight, fc.bias and onnx::Mul_7 get gradients; "/scale/Sqrt_1_output_0"
// (rank 1, an exporter node output) is a constant.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    -> (tensor<f32> {nnx.name = "loss"}, tensor<3x4xf32> {nnx.name = "grad_fc.weight"}, tensor<3xf32> {nnx.name = "grad_fc.bias"}, tensor<1xf32> {nnx.name = "grad_onnx::Mul_7"})

// A regex can make an exporter-named constant a parameter (fully matched names only:
// onnx::Mul_7 does not match).
// RE-LABEL:    func.func @main
// RE-SAME:       {nnx.name = "grad_fc.weight"}, {{.*}} {nnx.name = "grad_fc.bias"}, {{.*}} {nnx.name = "grad_/scale/Sqrt_1_output_0"})

// ... or leave out a parameter (fc.bias is then a constant).
// ONE-LABEL:   func.func @main
// ONE-SAME:      -> (tensor<f32> {nnx.name = "loss"}, tensor<3x4xf32> {nnx.name = "grad_fc.weight"})

// A bad regex is one line naming the option.
// BAD: graph-autodiff: params is not a regular expression: 'fc(': missing ), unterminated subpattern at position 2
// BAD-NOT: Traceback
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = graph.constant dense<0.5> : tensor<3x4xf32> loc("fc.weight")
  %b = graph.constant dense<0.1> : tensor<3xf32> loc("fc.bias")
  %s = graph.constant dense<0.7> : tensor<1xf32> loc("/scale/Sqrt_1_output_0")
  %k = graph.constant dense<2.0> : tensor<1xf32> loc("onnx::Mul_7")
  %y = graph.gemm(%x, %w, %b) {transB = 1 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %z = graph.mul(%y, %s) : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %o = graph.mul(%z, %k) : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  func.return %o : tensor<2x3xf32>
}
