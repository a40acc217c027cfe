// Invalid graph IR: each case gets one diagnostic, at the op, saying what is wrong
// with numbers.
// RUN: nnx-opt %s --split-input-file --verify-diagnostics

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32> {
  // expected-error@+1 {{input has 3 channels, weight expects 2 (group=2)}}
  %y = graph.conv(%x, %w) {group = 2 : i64} : (tensor<1x3x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32>
  func.return %y : tensor<1x6x6x6xf32>
}

// -----

func.func @conv_result(%x: tensor<1x3x8x8xf32>, %w: tensor<6x3x3x3xf32>) -> tensor<1x6x8x8xf32> {
  // expected-error@+1 {{result #0 has type tensor<1x6x8x8xf32>, operands imply tensor<1x6x4x4xf32>}}
  %y = graph.conv(%x, %w) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<6x3x3x3xf32>) -> tensor<1x6x8x8xf32>
  func.return %y : tensor<1x6x8x8xf32>
}

// -----

func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<6x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x6x6x6xf32> {
  // expected-error@+1 {{bias has shape [3], expected [6]}}
  %y = graph.conv(%x, %w, %b) : (tensor<1x3x8x8xf32>, tensor<6x3x3x3xf32>, tensor<3xf32>) -> tensor<1x6x6x6xf32>
  func.return %y : tensor<1x6x6x6xf32>
}

// -----

func.func @broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{shapes [2, 3], [4] do not broadcast}}
  %y = graph.add(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xi64>) -> tensor<2x3xf32> {
  // expected-error@+1 {{operand element types differ: f32, i64}}
  %y = graph.mul(%a, %b) : (tensor<2x3xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @compare_i1(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{result #0 has type tensor<2x3xf32>, operands imply tensor<2x3xi1>}}
  %y = graph.less(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error@+1 {{inner dimensions differ: A [2, 3] has 3, B [4, 5] has 4}}
  %y = graph.matmul(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}

// -----

func.func @gemm(%a: tensor<3x2xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error@+1 {{A [3, 2] (transA=0) has K=2, B [3, 4] (transB=0) has K=3}}
  %y = graph.gemm(%a, %b) : (tensor<3x2xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// -----

func.func @reshape_constant(%x: tensor<2x3xf32>) -> tensor<4x2xf32> {
  %s = graph.constant dense<[4, -1]> : tensor<2xi64>
  // expected-error@+1 {{cannot reshape [2, 3] (6 elements) to [4, -1]}}
  %y = graph.reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  func.return %y : tensor<4x2xf32>
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>, %s: tensor<2xi64>) -> tensor<4x2xf32> {
  // expected-error@+1 {{6 elements cannot become 8}}
  %y = graph.reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  func.return %y : tensor<4x2xf32>
}

// -----

func.func @transpose(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error@+1 {{perm [0, 0] is not a permutation of 2 axes}}
  %y = graph.transpose(%x) {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return %y : tensor<2x2xf32>
}

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %y = graph.softmax(%x) {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @concat(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  // expected-error@+1 {{input #1 [3, 3] differs from input #0 [2, 3] outside axis 1}}
  %y = graph.concat(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return %y : tensor<2x6xf32>
}

// -----

func.func @split(%x: tensor<2x6xf32>) -> tensor<2x2xf32> {
  %s = graph.constant dense<[2, 3]> : tensor<2xi64>
  // expected-error@+1 {{split [2, 3] sums to 5, axis has size 6}}
  %a, %b = graph.split(%x, %s) {axis = 1 : i64} : (tensor<2x6xf32>, tensor<2xi64>) -> (tensor<2x2xf32>, tensor<2x3xf32>)
  func.return %a : tensor<2x2xf32>
}

// -----

func.func @batch_norm(%x: tensor<1x3x4x4xf32>, %s: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error@+1 {{scale has shape [4], input has 3 channels (expected [3])}}
  %y = graph.batch_normalization(%x, %s, %b, %b, %b) : (tensor<1x3x4x4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

// -----

func.func @max_pool_kernel(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error@+1 {{kernel_shape attribute is required}}
  %y = graph.max_pool(%x) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

// -----

func.func @max_pool_ceil(%x: tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32> {
  // expected-error@+1 {{result #0 has type tensor<1x3x3x3xf32>, operands imply tensor<1x3x4x4xf32>}}
  %y = graph.max_pool(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
  func.return %y : tensor<1x3x3x3xf32>
}

// -----

func.func @max_pool_indices(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x2x2xf32> {
  // expected-error@+1 {{result #1 has type tensor<1x3x2x2xf32>, operands imply tensor<1x3x2x2xi64>}}
  %y, %i = graph.max_pool(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x4x4xf32>) -> (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>)
  func.return %y : tensor<1x3x2x2xf32>
}

// -----

func.func @squeeze(%x: tensor<1x3xf32>) -> tensor<1xf32> {
  %a = graph.constant dense<[1]> : tensor<1xi64>
  // expected-error@+1 {{cannot squeeze axis 1 of size 3 (shape [1, 3])}}
  %y = graph.squeeze(%x, %a) : (tensor<1x3xf32>, tensor<1xi64>) -> tensor<1xf32>
  func.return %y : tensor<1xf32>
}

// -----

func.func @where(%c: tensor<2x3xf32>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{condition must be i1 (bool), got f32}}
  %y = graph.where(%c, %x, %x) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @cast(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{result #0 has type tensor<2x3xf32>, operands imply tensor<2x3xi64>}}
  %y = graph.cast(%x) {to = 7 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @slice(%x: tensor<5x6xf32>) -> tensor<5x3xf32> {
  %s = graph.constant dense<1> : tensor<1xi64>
  %e = graph.constant dense<3> : tensor<1xi64>
  // expected-error@+1 {{result #0 has type tensor<5x3xf32>, operands imply tensor<5x2xf32>}}
  %y = graph.slice(%x, %s, %e, %s) : (tensor<5x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5x3xf32>
  func.return %y : tensor<5x3xf32>
}

// -----

func.func @range(%x: tensor<2xf32>) -> tensor<3xi64> {
  %a = graph.constant dense<0> : tensor<i64>
  %b = graph.constant dense<10> : tensor<i64>
  %c = graph.constant dense<3> : tensor<i64>
  // expected-error@+1 {{result #0 has type tensor<3xi64>, operands imply tensor<4xi64>}}
  %y = graph.range(%a, %b, %c) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<3xi64>
  func.return %y : tensor<3xi64>
}

// -----

func.func @layer_norm(%x: tensor<2x5xf32>, %s: tensor<4xf32>) -> tensor<2x5xf32> {
  // expected-error@+1 {{Scale shape [4] does not broadcast to [5]}}
  %y = graph.layer_normalization(%x, %s) : (tensor<2x5xf32>, tensor<4xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}

// -----

func.func @attribute_kind(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{graph.leaky_relu: attribute 'alpha' cannot hold 1 : i64}}
  %y = graph.leaky_relu(%x) {alpha = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @unknown_attribute(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{unknown attribute 'alpah'}}
  %y = graph.leaky_relu(%x) {alpah = 1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @operand_count(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{graph.add: 3 inputs, at most 2 allowed}}
  %y = graph.add(%x, %x, %x) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @missing_input(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{graph.add: required input 'B' missing}}
  %y = graph.add(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @type_count(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{graph.add: 2 operands but 1 operand types}}
  %y = graph.add(%x, %x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @after_self(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{'after' refers to its own result}}
  %y = graph.relu(%x) after(%y : tensor<2x3xf32>) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @order(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{(op #0 of the block) uses a value of graph.relu (op #1) that comes later in the block: the op order is not a topological order}}
  %a = graph.relu(%x) after(%b : tensor<2x3xf32>) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a : tensor<2x3xf32>
}

// -----

func.func @non_zero(%x: tensor<2x3xf32>) -> tensor<3x4xi64> {
  // expected-error@+1 {{result must be tensor<2x?xi64> (input rank 2), got tensor<3x4xi64>}}
  %y = graph.non_zero(%x) : (tensor<2x3xf32>) -> tensor<3x4xi64>
  func.return %y : tensor<3x4xi64>
}

// -----

func.func @dynamic(%x: tensor<2x3xf32>) -> tensor<?x3xf32> {
  // expected-error@+1 {{result #0 has type tensor<?x3xf32>, operands imply tensor<2x3xf32>}}
  %y = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<?x3xf32>
  func.return %y : tensor<?x3xf32>
}
