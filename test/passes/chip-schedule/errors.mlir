// RUN: not nnx-opt %s -p chip-schedule 2>&1 | FileCheck %s

// Scheduling after chip-sync would break the tokens: one error at the first one.
// CHECK: error: 'chip.signal' op chip-schedule: the program already has SIGNAL/WAIT (run it before chip-sync)
chip.program {storage_bytes = 4096 : i64} {
  chip.signal DAU0 t0
  chip.wait VPU0 t0
}
