// RUN: nnx-opt %s --split-input-file --verify-diagnostics -p 'chip-lower{target="%S/../lower-to-chip/Inputs/micro.toml"}'

// chip-lower run on its own names itself in its diagnostics (the composite
// lower-to-chip names itself: test/passes/lower-to-chip/errors.mlir).
// micro.toml has 256-byte caches: a softmax over a 128-element row does not fit.
func.func @main(%x: tensor<2x128xf32>) -> tensor<2x128xf32> {
  // expected-error@+1 {{'graph.softmax' op chip-lower: graph.softmax does not fit the caches: even the smallest tile needs 512 bytes of the N cache (256 bytes)}}
  %y = graph.softmax(%x) {axis = -1 : i64} : (tensor<2x128xf32>) -> tensor<2x128xf32>
  func.return %y : tensor<2x128xf32>
}

// -----

// An op the chip has no lowering for (a func.call) is one error at that op.
func.func private @f(tensor<4xf32>) -> tensor<4xf32>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'func.call' op chip-lower: cannot lower func.call}}
  %y = func.call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
