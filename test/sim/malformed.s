; Malformed assembly lines: one line with the line number, exit 1.
; RUN: not nnx-run %s 2>&1 | FileCheck %s
; CHECK: malformed.s:[[# @LINE + 5]]: error: MatMul runs on a MPU unit, not on VPU0
; CHECK-NOT: Traceback
.storage 64
.text
DAU0 LOAD N:0x0<4xf32> <- S:0x0<4xf32>
VPU0 MatMul O:0x0<2x2xf32> <- N:0x0<2x2xf32>, W:0x0<2x2xf32>
