; The RECV's tile is smaller than what the matching SEND sends.
; RUN: not nnx-run %s --target %S/Inputs/mesh2x2.toml 2>&1 | FileCheck %s
; CHECK: mesh_size_mismatch.s:[[# @LINE + 9]]: error: RECV of core 0 -> core 1 tag 't' takes 2 x f32, the matching SEND (line [[# @LINE + 5]]) sends 4 x f32
.mesh 2x2
.core 0
.storage 16
.text
DAU0 SEND @1:t <- S:0x0<4xf32>
.core 1
.storage 16
.text
DAU0 RECV S:0x0<2xf32> <- @0:t
