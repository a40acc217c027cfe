; Each core first waits for the other's message: a deadlock, named with both lines.
; RUN: not nnx-run %s --target %S/Inputs/mesh2x2.toml 2>&1 | FileCheck %s
; CHECK: mesh_deadlock.s:[[# @LINE + 6]]: error: deadlock: core 0 DAU0 RECV of core 1 -> core 0 tag 'a' can never complete; also blocked: core 1 DAU0 RECV of core 0 -> core 1 tag 'b' (line [[# @LINE + 11]])
; CHECK-NOT: Traceback
.mesh 2x2
.core 0
.storage 16
.text
DAU0 RECV S:0x0<4xf32> <- @1:a
DAU0 SEND @1:b <- S:0x0<4xf32>
.core 1
.storage 16
.text
DAU0 RECV S:0x0<4xf32> <- @0:b
DAU0 SEND @0:a <- S:0x0<4xf32>
