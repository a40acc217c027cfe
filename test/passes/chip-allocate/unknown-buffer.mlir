// RUN: not nnx-opt %s -p chip-allocate 2>&1 | FileCheck %s

// An `nnx.access` that names a buffer the program does not declare cannot be
// allocated: one error at the instruction, naming the pass.
// CHECK: error: 'chip.load' op chip-allocate: nnx.access names @t9, which is not a chip.buffer

chip.program {storage_bytes = 0 : i64} {
  chip.buffer @t0 {bytes = 128 : i64, kind = "input"}
  chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<@t0:0x0, 4x8xf32> {nnx.access = "S:@t9 | N:0:128"}
}
