// RUN: not nnx-opt %s --split-input-file -p chip-link 2>&1 | FileCheck %s

// An allocated program (no chip.buffer, absolute storage tiles) has no symbols
// left to link: one error at the program, naming the pass.
// CHECK: error: 'chip.program' op chip-link: program 0 is already allocated (no chip.buffer): link chip-lower's output, before chip-allocate
chip.program {storage_bytes = 128 : i64} {
  chip.input @x #chip.tile<S:0x0, 4x8xf32>
  chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<S:0x0, 4x8xf32>
}

// -----

// The second program reads @v as 4x8xf32 (128 bytes) but the first produces a
// 2x8xf32 tensor under that name: the programs do not belong together.
// CHECK: errors.mlir:[[# @LINE + 7]]:1: error: 'chip.program' op chip-link: program 1: input @v (@t0:0x0<4x8xf32>) does not match the output it links to (@s0_t1:0x0<2x8xf32>)
chip.program {storage_bytes = 0 : i64} {
  chip.buffer @t0 {bytes = 64 : i64, kind = "input"}
  chip.buffer @t1 {bytes = 64 : i64, kind = "output"}
  chip.input @x #chip.tile<@t0:0x0, 2x8xf32>
  chip.output @v #chip.tile<@t1:0x0, 2x8xf32>
}
chip.program {storage_bytes = 0 : i64} {
  chip.buffer @t0 {bytes = 128 : i64, kind = "input"}
  chip.input @v #chip.tile<@t0:0x0, 4x8xf32>
}

// -----

// Without a chip.program there is nothing to link.
// CHECK: error: chip-link: expected a chip.program (run chip-lower first)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
