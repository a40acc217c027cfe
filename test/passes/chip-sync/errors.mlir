// RUN: not nnx-opt %s -p chip-sync 2>&1 | FileCheck %s

// A block order that runs the relu (sequential position 1) before the load it reads
// (position 0) is not a schedule of the program: one error at the relu.
// CHECK: errors.mlir:8:3: error: 'chip.vpu' op chip-sync: the instruction at position 0 (VPU0 Relu) comes before the one it depends on at position 1 (DAU0 LOAD)
chip.program {storage_bytes = 4096 : i64} {
  chip.input @x #chip.tile<S:0x0, 4x8xf32>
  chip.vpu Relu VPU0 #chip.tile<O:0x0, 4x8xf32> <- #chip.tile<N:0x0, 4x8xf32> {nnx.access = "N:0:128 | O:0:128", nnx.seq = 1 : i64}
  chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<S:0x0, 4x8xf32> {nnx.access = "S:0:128 | N:0:128", nnx.seq = 0 : i64}
}
