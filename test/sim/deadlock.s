; Every remaining unit waits on a token nobody signals: one line, exit 1.
; RUN: not nnx-run %s 2>&1 | FileCheck %s
; CHECK: deadlock.s:[[# @LINE + 5]]: error: deadlock: MPU0 waits for token 'b' that no unit will signal; also waiting: DAU0 (line [[# @LINE + 7]], token a)
; CHECK-NOT: Traceback
.storage 64
.text
DAU0 LOAD N:0x0<4xf32> <- S:0x0<4xf32>
MPU0 WAIT b
MPU0 SIGNAL a
DAU0 WAIT a
DAU0 SIGNAL b
