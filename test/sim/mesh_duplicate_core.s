; Two sections for core 1.
; RUN: not nnx-run %s --target %S/Inputs/mesh2x2.toml 2>&1 | FileCheck %s
; CHECK: mesh_duplicate_core.s:[[# @LINE + 5]]: error: core 1 already has a section (line [[# @LINE + 2]])
.mesh 2x2
.core 1
.storage 16
.text
.core 1
.storage 16
.text
