; One multicast SEND from core 0 to cores 1-3 along the XY tree (links 0->1, 0->2
; and 1->3, each carrying the 256 bytes once), run as a stream of 2 inferences: the
; report counts 2 messages of 256 bytes over 3 links each (hand-computed in
; test/python/test_mesh_multicast.py), and the error of a bad core set is one line.
; RUN: nnx-run %s --target %S/Inputs/mesh2x2.toml --stream 2 --report %t.json
; RUN: FileCheck %s < %t.json
; RUN: sed -e 's/@{1-3}/@{0-3}/' %s > %t.bad.s
; RUN: not nnx-run %t.bad.s --target %S/Inputs/mesh2x2.toml 2>&1 | FileCheck %s --check-prefix=ERR
; CHECK: "inferences": 2,
; CHECK: "noc_bytes": 512,
; CHECK: "noc_byte_hops": 1536,
; CHECK: "noc_messages": 2,
; CHECK: "links": {
; CHECK-NEXT: "0->1": {
; CHECK-NEXT: "bytes": 512,
; CHECK: "0->2": {
; CHECK-NEXT: "bytes": 512,
; CHECK: "1->3": {
; CHECK-NEXT: "bytes": 512,
; ERR: bad.s:{{[0-9]+}}: error: SEND: core 0 is in its own multicast set
.mesh 2x2
.core 0
.storage 256
.text
DAU0 SEND @{1-3}:t0 <- S:0x0<4x16xf32>
.core 1
.storage 256
.text
DAU0 RECV S:0x0<4x16xf32> <- @0:t0
.core 2
.storage 256
.text
DAU0 RECV S:0x0<4x16xf32> <- @0:t0
.core 3
.storage 256
.text
DAU0 RECV S:0x0<4x16xf32> <- @0:t0
