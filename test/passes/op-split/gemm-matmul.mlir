// op-split on Gemm (fc) and MatMul: rows (the batch) first, then output columns in
// multiples of 128; the reduced axis K is never split.

// RUN: nnx-opt %s -split-input-file -p 'op-split{threshold=200000}' | FileCheck %s

// Gemm with 4 rows and 256 KB of weights (266 KB in all): the rows split (A sliced,
// B and the bias whole) down to pairs of rows (a piece of a matrix product keeps two
// rows), which still exceed 200 KB with the whole weights; each row piece then
// splits its columns (B and the bias sliced, in 128-column pieces: 131 KB each).
// CHECK-LABEL: func.func @gemm
// CHECK:         graph.slice(%a, {{.*}} -> tensor<2x256xf32>
// CHECK:         graph.gemm({{.*}}) {transB = 1 : i64} : (tensor<2x256xf32>, tensor<128x256xf32>, tensor<128xf32>) -> tensor<2x128xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64} {{.*}} -> tensor<2x256xf32>
// CHECK:         graph.concat({{.*}}) {axis = 0 : i64} {{.*}} -> tensor<4x256xf32>
func.func @gemm(%a: tensor<4x256xf32>) -> tensor<4x256xf32> {
  %w = graph.constant dense<0.5> : tensor<256x256xf32>
  %b = graph.constant dense<0.25> : tensor<256xf32>
  %y = graph.gemm(%a, %w, %b) {transB = 1 : i64} : (tensor<4x256xf32>, tensor<256x256xf32>, tensor<256xf32>) -> tensor<4x256xf32>
  func.return %y : tensor<4x256xf32>
}

// -----

// Batched MatMul of two activations (3 x 128 KB): the leading (batch) axis first;
// both operands are sliced along it, halves fit.
// CHECK-LABEL: func.func @matmul_batch
// CHECK:         %[[A:.*]] = graph.slice(%a, {{.*}} -> tensor<4x64x64xf32>
// CHECK:         %[[B:.*]] = graph.slice(%b, {{.*}} -> tensor<4x64x64xf32>
// CHECK:         graph.matmul(%[[A]], %[[B]]) : (tensor<4x64x64xf32>, tensor<4x64x64xf32>) -> tensor<4x64x64xf32>
// CHECK:         graph.concat({{.*}}) {axis = 0 : i64}
func.func @matmul_batch(%a: tensor<8x64x64xf32>, %b: tensor<8x64x64xf32>) -> tensor<8x64x64xf32> {
  %y = graph.matmul(%a, %b) : (tensor<8x64x64xf32>, tensor<8x64x64xf32>) -> tensor<8x64x64xf32>
  func.return %y : tensor<8x64x64xf32>
}

// -----

// A broadcast operand (rank 2 against a batched rank 3) stays whole.
// CHECK-LABEL: func.func @matmul_broadcast
// CHECK:         %[[A:.*]] = graph.slice(%a, {{.*}} -> tensor<4x64x64xf32>
// CHECK:         graph.matmul(%[[A]], %w) : (tensor<4x64x64xf32>, tensor<64x64xf32>) -> tensor<4x64x64xf32>
func.func @matmul_broadcast(%a: tensor<8x64x64xf32>, %w: tensor<64x64xf32>) -> tensor<8x64x64xf32> {
  %y = graph.matmul(%a, %w) : (tensor<8x64x64xf32>, tensor<64x64xf32>) -> tensor<8x64x64xf32>
  func.return %y : tensor<8x64x64xf32>
}
