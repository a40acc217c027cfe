// RUN: not nnx-opt %s -p chip-sync 2>&1 | FileCheck %s

// A program that already has SIGNAL/WAIT is final.
// CHECK: error: 'chip.signal' op chip-sync: the program already has SIGNAL/WAIT (run it before chip-sync)
chip.program {storage_bytes = 4096 : i64} {
  chip.signal DAU0 t0
  chip.wait VPU0 t0
}
