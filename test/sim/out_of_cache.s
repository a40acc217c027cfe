; An address beyond the neuron cache of the target: one line with the line number.
; RUN: not nnx-run %s 2>&1 | FileCheck %s
; CHECK: out_of_cache.s:[[# @LINE + 4]]: error: tile N:0xffff0<8xf32> ends at byte 1048592, beyond the neuron cache (1048576 bytes)
; CHECK-NOT: Traceback
.storage 64
.text
DAU0 LOAD N:0xffff0<8xf32> <- S:0x0<8xf32>
