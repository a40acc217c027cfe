// tensor-timing: TAT/TRT/TTS of every op by the queue algorithm (mode=asap) and by
// the block's own order on the target's units (mode=schedule); default target:
// VPU ops on 64x64 f32 are bound by device-memory traffic (64 bytes/cycle): a unary
// op moves 32 KiB (512 cycles), a binary op 48 KiB (768 cycles).

// RUN: nnx-opt %s --split-input-file -p tensor-timing | FileCheck %s
// RUN: nnx-opt %s --split-input-file -p 'tensor-timing{mode=schedule}' | FileCheck %s --check-prefix=SCHED
// RUN: nnx-opt %s --split-input-file -p 'tensor-timing{report=-}' 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT

// A diamond: %a waits for the two-op branch; its slack at the add is one op's delay.
// CHECK-LABEL: func.func @diamond
// CHECK:       %a = graph.relu(%x) {nnx.delay = 512 : i64, nnx.tat = 512 : i64, nnx.trt = 0 : i64, nnx.tts = array<i64: 0>}
// CHECK:       %b = graph.sigmoid(%a) {nnx.delay = 512 : i64, nnx.tat = 1024 : i64, nnx.trt = 512 : i64, nnx.tts = array<i64: 0>}
// CHECK:       %c = graph.tanh(%b) {nnx.delay = 512 : i64, nnx.tat = 1536 : i64, nnx.trt = 1024 : i64, nnx.tts = array<i64: 0>}
// CHECK:       %y = graph.add(%c, %a) {nnx.delay = 768 : i64, nnx.tat = 2304 : i64, nnx.trt = 1536 : i64, nnx.tts = array<i64: 0, 1024>}
// REPORT: # tensor-timing @diamond: op, delay, TAT, TRT, TTS per operand
// REPORT: 3	graph.add	768	2304	1536	0,1024
func.func @diamond(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %a = graph.relu(%x) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %b = graph.sigmoid(%a) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %c = graph.tanh(%b) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %y = graph.add(%c, %a) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %y : tensor<64x64xf32>
}

// -----

// Two independent branches: asap runs them at once (TRT 0 for both), the schedule
// runs them one after the other on the single VPU, so %q starts at 512; the add's
// slack on %p is real only in the schedule. Constants are sources (TAT 0).
// CHECK-LABEL: func.func @parallel
// CHECK:       %w = graph.constant {{.*}}nnx.delay = 0 : i64, nnx.tat = 0 : i64, nnx.trt = 0 : i64, nnx.tts = array<i64>
// CHECK:       %p = graph.relu(%x) {nnx.delay = 512 : i64, nnx.tat = 512 : i64, nnx.trt = 0 : i64
// CHECK:       %q = graph.relu(%w) {nnx.delay = 512 : i64, nnx.tat = 512 : i64, nnx.trt = 0 : i64
// CHECK:       graph.add(%p, %q) {nnx.delay = 768 : i64, nnx.tat = 1280 : i64, nnx.trt = 512 : i64, nnx.tts = array<i64: 0, 0>}
// SCHED-LABEL: func.func @parallel
// SCHED:       %q = graph.relu(%w) {nnx.delay = 512 : i64, nnx.tat = 1024 : i64, nnx.trt = 512 : i64
// SCHED:       graph.add(%p, %q) {nnx.delay = 768 : i64, nnx.tat = 1792 : i64, nnx.trt = 1024 : i64, nnx.tts = array<i64: 512, 0>}
func.func @parallel(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %w = graph.constant dense<1.0> : tensor<64x64xf32>
  %p = graph.relu(%x) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %q = graph.relu(%w) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %y = graph.add(%p, %q) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %y : tensor<64x64xf32>
}

// -----

// An `after` edge is an input for the timing (one TTS entry per operand, data
// inputs first): %b may not start before %a2 has arrived.
// CHECK-LABEL: func.func @control
// CHECK:       %b = graph.sigmoid(%a) {nnx.delay = 512 : i64, nnx.tat = 1536 : i64, nnx.trt = 1024 : i64, nnx.tts = array<i64: 512, 0>} after(%a2
func.func @control(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %a = graph.relu(%x) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %a2 = graph.relu(%a) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %b = graph.sigmoid(%a) after(%a2 : tensor<64x64xf32>) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %b : tensor<64x64xf32>
}
