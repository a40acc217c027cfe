; A RECV nobody sends to (the sender has no section at all).
; RUN: not nnx-run %s --target %S/Inputs/mesh2x2.toml 2>&1 | FileCheck %s
; CHECK: mesh_unmatched_recv.s:[[# @LINE + 5]]: error: RECV of core 2 -> core 1 tag 'a' has no matching SEND on core 2 (core 2 has no .core section)
.mesh 2x2
.core 1
.storage 16
.text
DAU0 RECV S:0x0<4xf32> <- @2:a
