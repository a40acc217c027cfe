; A SEND to a core outside the 2x2 mesh: one line with the line number, exit 1.
; RUN: not nnx-run %s --target %S/Inputs/mesh2x2.toml 2>&1 | FileCheck %s
; CHECK: mesh_unknown_core.s:[[# @LINE + 6]]: error: SEND: unknown core 7 (the mesh has cores 0..3)
; CHECK-NOT: Traceback
.mesh 2x2
.core 0
.storage 16
.text
DAU0 SEND @7:t <- S:0x0<4xf32>
