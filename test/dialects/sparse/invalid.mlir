// Invalid sparse IR: one clear diagnostic per case, at the op.
// RUN: nnx-opt %s --split-input-file --verify-diagnostics

func.func @bad_form(%w: tensor<4x8xf32>) {
  // expected-error@+1 {{!sparse.conn: form must be direct or stride, not 'csr'}}
  %c = sparse.connect %w {threshold = 0.5 : f64} : tensor<4x8xf32> -> !sparse.conn<csr, 4x8, per_output>
  func.return
}

// -----

func.func @bad_order(%w: tensor<4x8xf32>) {
  // expected-error@+1 {{order must be neuron, per_output or per_input, not 'rows'}}
  %c = sparse.connect %w {threshold = 0.5 : f64} : tensor<4x8xf32> -> !sparse.conn<direct, 4x8, rows>
  func.return
}

// -----

func.func @per_input_rank(%w: tensor<4x8xf32>) {
  // expected-error@+1 {{per_input connection data is [in, out] (rank 2), got rank 3}}
  %c = sparse.connect %w {threshold = 0.5 : f64} : tensor<4x8xf32> -> !sparse.conn<direct, 2x4x8, per_input>
  func.return
}

// -----

func.func @connect_shape(%w: tensor<4x8xf32>) {
  // expected-error@+1 {{'sparse.connect' op per_output connection data of a [4, 8] tensor has shape [4, 8], the result type says [8, 4]}}
  %c = sparse.connect %w {threshold = 0.5 : f64} : tensor<4x8xf32> -> !sparse.conn<direct, 8x4, per_output>
  func.return
}

// -----

func.func @connect_layout(%w: tensor<4x8xf32>) {
  // expected-error@+1 {{layout must be out_in or in_out, not 'oi'}}
  %c = sparse.connect %w {threshold = 0.5 : f64, layout = "oi"} : tensor<4x8xf32> -> !sparse.conn<direct, 4x8, per_output>
  func.return
}

// -----

func.func @convert_nothing(%c: !sparse.conn<direct, 4x8, per_output>) {
  // expected-error@+1 {{converts nothing (same form and order); remove it}}
  %d = sparse.convert %c : !sparse.conn<direct, 4x8, per_output> -> !sparse.conn<direct, 4x8, per_output>
  func.return
}

// -----

func.func @convert_neuron(%c: !sparse.conn<direct, 4x8, neuron>) {
  // expected-error@+1 {{cannot convert between neuron and weight connection data}}
  %d = sparse.convert %c : !sparse.conn<direct, 4x8, neuron> -> !sparse.conn<direct, 4x8, per_output>
  func.return
}

// -----

func.func @convert_reorder_shape(%c: !sparse.conn<direct, 4x8, per_output>) {
  // expected-error@+1 {{reordering per_output [4, 8] to per_input gives [8, 4]}}
  %d = sparse.convert %c : !sparse.conn<direct, 4x8, per_output> -> !sparse.conn<direct, 4x8, per_input>
  func.return
}

// -----

func.func @combine_stride_form(%a: !sparse.conn<stride, 8, neuron>, %b: !sparse.conn<stride, 4x8, per_output>) {
  // expected-error@+1 {{combining stride with stride connection data gives stride, not direct}}
  %c = sparse.combine %a, %b : !sparse.conn<stride, 8, neuron>, !sparse.conn<stride, 4x8, per_output> -> !sparse.conn<direct, 4x8, per_output>
  func.return
}

// -----

func.func @combine_length(%a: !sparse.conn<direct, 7, neuron>, %b: !sparse.conn<direct, 4x8, per_output>) {
  // expected-error@+1 {{strings of length 7 and 8 cannot be combined}}
  %c = sparse.combine %a, %b : !sparse.conn<direct, 7, neuron>, !sparse.conn<direct, 4x8, per_output> -> !sparse.conn<direct, 4x8, per_output>
  func.return
}

// -----

func.func @combine_per_input(%a: !sparse.conn<direct, 8, neuron>, %b: !sparse.conn<direct, 8x4, per_input>) {
  // expected-error@+1 {{convert it to per_output first}}
  %c = sparse.combine %a, %b : !sparse.conn<direct, 8, neuron>, !sparse.conn<direct, 8x4, per_input> -> !sparse.conn<direct, 4x8, per_output>
  func.return
}

// -----

func.func @combine_result(%a: !sparse.conn<direct, 2x8, neuron>, %b: !sparse.conn<direct, 4x8, per_output>) {
  // expected-error@+1 {{result type must be !sparse.conn<direct, 2x4x8, per_output>}}
  %c = sparse.combine %a, %b : !sparse.conn<direct, 2x8, neuron>, !sparse.conn<direct, 4x8, per_output> -> !sparse.conn<direct, 4x8, per_output>
  func.return
}

// -----

func.func @select_neuron_conn(%c: !sparse.conn<direct, 8, neuron>, %x: tensor<8xf32>, %w: tensor<4x8xf32>) {
  // expected-error@+1 {{needs weight connection data (per_output or per_input), got neuron connection data}}
  %pn, %pw = sparse.select %c, %x, %w : !sparse.conn<direct, 8, neuron>, tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  func.return
}

// -----

func.func @select_weights(%c: !sparse.conn<direct, 4x8, per_output>, %x: tensor<8xf32>, %w: tensor<5x8xf32>) {
  // expected-error@+1 {{weights [5, 8] are not [4, 8] as the per_output connection data says}}
  %pn, %pw = sparse.select %c, %x, %w : !sparse.conn<direct, 4x8, per_output>, tensor<8xf32>, tensor<5x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  func.return
}

// -----

func.func @group_prune_groups(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{groups must be in [1, 8] (elements per grouping), got 9}}
  %g = sparse.group_prune %x {groups = 9 : i64, threshold = 0.1 : f64, count_threshold = 1 : i64, axis = 1 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>
  func.return
}

// -----

func.func @group_prune_count(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{count_threshold must be >= 0, got -1}}
  %g = sparse.group_prune %x {groups = 2 : i64, threshold = 0.1 : f64, count_threshold = -1 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>
  func.return
}

// -----

func.func @fc_inputs(%x: tensor<2x7xf32>, %w: tensor<4x8xf32>, %c: !sparse.conn<direct, 4x8, per_output>) {
  // expected-error@+1 {{input [2, 7] must end in the weight's 8 inputs}}
  %y = sparse.fc(%x, %w) conn(%c) : (tensor<2x7xf32>, tensor<4x8xf32>), !sparse.conn<direct, 4x8, per_output> -> tensor<2x4xf32>
  func.return
}

// -----

func.func @fc_conn(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %c: !sparse.conn<direct, 8x4, per_output>) {
  // expected-error@+1 {{is for 8 outputs x 4 inputs, the weights have 4 x 8}}
  %y = sparse.fc(%x, %w) conn(%c) : (tensor<2x8xf32>, tensor<4x8xf32>), !sparse.conn<direct, 8x4, per_output> -> tensor<2x4xf32>
  func.return
}

// -----

func.func @fc_lead(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %c: !sparse.conn<direct, 3x4x8, per_output>) {
  // expected-error@+1 {{leading dims [3] of the connection data do not broadcast to the input's [2]}}
  %y = sparse.fc(%x, %w) conn(%c) : (tensor<2x8xf32>, tensor<4x8xf32>), !sparse.conn<direct, 3x4x8, per_output> -> tensor<2x4xf32>
  func.return
}

// -----

func.func @fc_bias(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<3xf32>, %c: !sparse.conn<direct, 4x8, per_output>) {
  // expected-error@+1 {{bias must be [4], got [3]}}
  %y = sparse.fc(%x, %w, %b) conn(%c) : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<3xf32>), !sparse.conn<direct, 4x8, per_output> -> tensor<2x4xf32>
  func.return
}

// -----

func.func @matmul_result(%x: tensor<2x8xf32>, %b: tensor<8x4xf32>, %c: !sparse.conn<direct, 8x4, per_input>) {
  // expected-error@+1 {{result must be tensor<2x4xf32>, got tensor<2x5xf32>}}
  %y = sparse.matmul(%x, %b) conn(%c) : (tensor<2x8xf32>, tensor<8x4xf32>), !sparse.conn<direct, 8x4, per_input> -> tensor<2x5xf32>
  func.return
}

// -----

func.func @conv_group(%x: tensor<1x3x8x8xf32>, %k: tensor<4x2x3x3xf32>, %c: !sparse.conn<direct, 4x18, per_output>) {
  // expected-error@+1 {{group 1: input channels 3 / group must equal the weight's 2}}
  %y = sparse.conv(%x, %k) conn(%c) : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>), !sparse.conn<direct, 4x18, per_output> -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @conv_combined(%x: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>, %c: !sparse.conn<direct, 1x4x27, per_output>) {
  // expected-error@+1 {{connection data must be weight-only ([out, in] or [in, out])}}
  %y = sparse.conv(%x, %k) conn(%c) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>), !sparse.conn<direct, 1x4x27, per_output> -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @conv_result(%x: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>, %c: !sparse.conn<direct, 4x27, per_output>) {
  // expected-error@+1 {{result must be tensor<1x4x6x6xf32>, got tensor<1x4x8x8xf32>}}
  %y = sparse.conv(%x, %k) conn(%c) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>), !sparse.conn<direct, 4x27, per_output> -> tensor<1x4x8x8xf32>
  func.return
}
