; A 2x2 program run without --target: `.target` names no built-in target, so the
; embedded default (a 4x4 mesh) is used and refused.
; RUN: not nnx-run %s 2>&1 | FileCheck %s
; CHECK: mesh_wrong_target.s:[[# @LINE + 2]]: error: the program is for a 2x2 mesh, the target 'nnx-default' has 4x4 (choose it with --target)
.target my-chip
.mesh 2x2
.core 0
.storage 16
.text
