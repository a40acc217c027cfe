// RUN: not nnx-opt %s -p chip-allocate 2>&1 | FileCheck %s

// Without a chip.program there is nothing to allocate: one error line.
// CHECK: error: chip-allocate: expected a chip.program (run chip-lower first)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

