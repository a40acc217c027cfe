// RUN: nnx-opt %s --split-input-file --verify-diagnostics
// RUN: nnx-opt %s -split-input-file -verify-diagnostics -p graph-fold-constants

func.func @result_type(%x: tensor<2xf32>) -> tensor<3xf32> {
  %a = graph.constant dense<[1.0, -2.0]> : tensor<2xf32>
  // expected-error@+1 {{'graph.add' op result #0 has type tensor<3xf32>}}
  %s = graph.add(%a, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}

// -----

func.func @undefined(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = graph.add(%x, %q) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> // expected-error {{use of undefined value '%q'}}
  func.return %y : tensor<2xf32>
}

// -----

func.func @above(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = graph.relu(%x) : (tensor<2xf32>) -> tensor<5xf32>
  // expected-error@above {{'graph.relu' op result #0 has type tensor<5xf32>}}
  func.return %x : tensor<2xf32>
}

// -----

func.func @minus(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = graph.relu(%x) : (tensor<2xf32>) -> tensor<5xf32>

  // expected-error@-2 {{result #0 has type}}
  func.return %x : tensor<2xf32>
}

// -----

// No diagnostics expected, none produced.
func.func @fine(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
