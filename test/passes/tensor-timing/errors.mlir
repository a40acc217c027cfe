// tensor-timing: bad options are one line with the reason.

// RUN: not nnx-opt %s -p 'tensor-timing{mode=fast}' 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not nnx-opt %s -p 'tensor-timing{target="%S/missing.toml"}' 2>&1 | FileCheck %s --check-prefix=TARGET
// MODE: error: tensor-timing: mode must be one of ['asap', 'schedule'], got 'fast'
// TARGET: error: tensor-timing: {{.*}}missing.toml: cannot read: No such file or directory
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
