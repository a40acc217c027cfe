; The slices of an output must tile it exactly: rows 2..3 of y are written by no
; core. One line with the line number of the last slice, exit 1.
; RUN: not nnx-run %s --target %S/Inputs/mesh2x2.toml 2>&1 | FileCheck %s
; CHECK: mesh_output_gap.s:[[# @LINE + 9]]: error: .output y: no core writes 2:3 along axis 0 of 4x4
; CHECK-NOT: Traceback
.mesh 2x2
.core 0
.storage 128
.output y S:0x0<2x4xf32> slice=0:0:2 of 4x4
.text
.core 1
.storage 128
.output y S:0x0<1x4xf32> slice=0:3:4 of 4x4
.text
