; A tile from core 0 to core 3 (2 hops of 2 cycles, 16 bytes/cycle links): the report
; holds the cycles (hand-computed in test/python/test_mesh_sim.py), noc_bytes and
; noc_byte_hops, the load on both links of the XY route, and a trace track per core.
; RUN: nnx-run %s --target %S/Inputs/mesh2x2.toml --report %t.json --trace %t.trace.json --plot %t.png
; RUN: FileCheck %s < %t.json
; RUN: FileCheck %s --check-prefix=TRACE < %t.trace.json
; CHECK: "cycles": 53,
; CHECK: "noc_bytes": 256,
; CHECK: "noc_byte_hops": 512,
; CHECK: "links": {
; CHECK-NEXT: "0->1": {
; CHECK-NEXT: "bytes": 256,
; CHECK-NEXT: "busy_cycles": 16,
; CHECK: "1->3": {
; TRACE: "name":"core 0"
; TRACE: "name":"core 3"
.mesh 2x2
.core 0
.storage 256
.text
DAU0 SEND @3:t0 <- S:0x0<4x16xf32>
.core 3
.storage 256
.text
DAU0 RECV S:0x0<4x16xf32> <- @0:t0
