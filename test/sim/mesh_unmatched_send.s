; A SEND whose destination core never receives it: the SEND's line, exit 1, no report.
; RUN: rm -f %t.json
; RUN: not nnx-run %s --target %S/Inputs/mesh2x2.toml --report %t.json 2>&1 | FileCheck %s
; RUN: not test -e %t.json
; CHECK: mesh_unmatched_send.s:[[# @LINE + 5]]: error: SEND of core 0 -> core 3 tag 'x' has no matching RECV on core 3
.mesh 2x2
.core 0
.storage 16
.text
DAU0 SEND @3:x <- S:0x0<4xf32>
.core 3
.storage 16
.text
DAU0 RECV S:0x0<4xf32> <- @0:y
