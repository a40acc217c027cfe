// op-split on Gemm (fc) and MatMul: leading axes and rows first (rows in multiples
// of the interpreter's 32-row product blocks), then output columns in multiples of
// its 128-column blocks; the reduced axis K is never split.

// RUN: nnx-opt %s -split-input-file -p 'op-split{threshold=200000}' | FileCheck %s

// Gemm with 64 rows and 256 KB of weights (385 KB in all): the rows split (A sliced,
// B and the bias whole) down to one 32-row block, which still exceeds 200 KB with the
// whole weights; each row piece then splits its columns (B and the bias sliced, in
// 128-column pieces: 177 KB each).
// CHECK-LABEL: func.func @gemm
// CHECK:         graph.slice(%a, {{.*}} -> tensor<32x256xf32>
// CHECK:         graph.gemm({{.*}}) {transB = 1 : i64} : (tensor<32x256xf32>, tensor<128x256xf32>, tensor<128xf32>) -> tensor<32x128xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64} {{.*}} -> tensor<32x256xf32>
// CHECK:         graph.concat({{.*}}) {axis = 0 : i64} {{.*}} -> tensor<64x256xf32>
func.func @gemm(%a: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %w = graph.constant dense<0.5> : tensor<256x256xf32>
  %b = graph.constant dense<0.25> : tensor<256xf32>
  %y = graph.gemm(%a, %w, %b) {transB = 1 : i64} : (tensor<64x256xf32>, tensor<256x256xf32>, tensor<256xf32>) -> tensor<64x256xf32>
  func.return %y : tensor<64x256xf32>
}

// -----

// One row (a batch-1 fc): only the columns split. 300 columns are two whole
// 128-column blocks and a partial one, which joins the last piece (172 columns).
// CHECK-LABEL: func.func @gemm_one_row
// CHECK-NOT:     graph.slice
// CHECK:         graph.gemm(%a, {{.*}}) {transB = 1 : i64} : (tensor<1x256xf32>, tensor<128x256xf32>, tensor<128xf32>) -> tensor<1x128xf32>
// CHECK:         graph.gemm(%a, {{.*}}) {transB = 1 : i64} : (tensor<1x256xf32>, tensor<172x256xf32>, tensor<172xf32>) -> tensor<1x172xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64} {{.*}} -> tensor<1x300xf32>
func.func @gemm_one_row(%a: tensor<1x256xf32>) -> tensor<1x300xf32> {
  %w = graph.constant dense<0.5> : tensor<300x256xf32>
  %b = graph.constant dense<0.25> : tensor<300xf32>
  %y = graph.gemm(%a, %w, %b) {transB = 1 : i64} : (tensor<1x256xf32>, tensor<300x256xf32>, tensor<300xf32>) -> tensor<1x300xf32>
  func.return %y : tensor<1x300xf32>
}

// -----

// MatMul rows (the leading axis has size 1): 512 rows of activations against a
// 64 KB weight (576 KB in all) go in four 128-row pieces (192 KB each); the
// weight stays whole.
// CHECK-LABEL: func.func @matmul_rows
// CHECK:         %[[A:.*]] = graph.slice(%a, {{.*}} -> tensor<1x128x128xf32>
// CHECK:         graph.matmul(%[[A]], %w) : (tensor<1x128x128xf32>, tensor<128x128xf32>) -> tensor<1x128x128xf32>
// CHECK-COUNT-3: graph.matmul
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64} {{.*}} -> tensor<1x512x128xf32>
func.func @matmul_rows(%a: tensor<1x512x128xf32>) -> tensor<1x512x128xf32> {
  %w = graph.constant dense<0.5> : tensor<128x128xf32>
  %y = graph.matmul(%a, %w) : (tensor<1x512x128xf32>, tensor<128x128xf32>) -> tensor<1x512x128xf32>
  func.return %y : tensor<1x512x128xf32>
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

// -----

// MatMul columns: 4 rows cannot be cut (fewer than one 32-row block); the
// 256 KB weight is cut into two 128-column constants.
// CHECK-LABEL: func.func @matmul_columns
// CHECK:         graph.matmul(%a, %{{.*}}) : (tensor<4x256xf32>, tensor<256x128xf32>) -> tensor<4x128xf32>
// CHECK:         graph.matmul(%a, %{{.*}}) : (tensor<4x256xf32>, tensor<256x128xf32>) -> tensor<4x128xf32>
// CHECK:         graph.concat({{.*}}) {axis = 1 : i64}
func.func @matmul_columns(%a: tensor<4x256xf32>) -> tensor<4x256xf32> {
  %w = graph.constant dense<0.5> : tensor<256x256xf32>
  %y = graph.matmul(%a, %w) : (tensor<4x256xf32>, tensor<256x256xf32>) -> tensor<4x256xf32>
  func.return %y : tensor<4x256xf32>
}
