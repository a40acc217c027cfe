// RUN: nnx-opt %s --split-input-file --verify-diagnostics -p 'lower-to-chip{target="%S/Inputs/micro.toml"}'
// RUN: not nnx-opt %s --split-input-file -p 'lower-to-chip{target="%S/Inputs/nonexistent.toml"}' 2>&1 | FileCheck %s --check-prefix=TARGET

// Inputs/micro.toml has 256-byte caches: a softmax reduces its whole 128-element axis,
// so even its smallest tile (one row) does not fit: a diagnostic names the op.
func.func @main(%x: tensor<2x128xf32>) -> tensor<2x128xf32> {
  // expected-error@+1 {{'graph.softmax' op lower-to-chip: graph.softmax does not fit the caches: even the smallest tile needs 512 bytes of the N cache (256 bytes)}}
  %y = graph.softmax(%x) {axis = -1 : i64} : (tensor<2x128xf32>) -> tensor<2x128xf32>
  func.return %y : tensor<2x128xf32>
}

// -----

// The same row-wise op tiles fine when the row fits.
func.func @main(%x: tensor<64x8xf32>) -> tensor<64x8xf32> {
  %y = graph.softmax(%x) {axis = -1 : i64} : (tensor<64x8xf32>) -> tensor<64x8xf32>
  func.return %y : tensor<64x8xf32>
}

// TARGET: error: lower-to-chip: {{.*}}nonexistent.toml
