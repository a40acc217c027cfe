; Sliced graph I/O (docs/mesh.md, "Inputs and outputs"): cores 0 and 1 each load a
; band of rows of x (overlapping by one halo row) and write their half of y, copied
; from the band: y is x. The off-chip traffic is the slices: 3 + 3 rows of x in, 2 + 2
; rows of y out (16 bytes a row).
; RUN: %python -c "import numpy as np; np.save('%t.x.npy', np.arange(16, dtype=np.float32).reshape(4, 4))"
; RUN: nnx-run %s --target %S/Inputs/mesh2x2.toml --input x=%t.x.npy --output-dir %t.out --report %t.json
; RUN: FileCheck %s < %t.json
; RUN: %python -c "import numpy as np; y = np.load('%t.out/y.npy'); assert (y == np.arange(16).reshape(4, 4)).all(), y"
; CHECK: "input_bytes": 96,
; CHECK-NEXT: "output_bytes": 64,
.mesh 2x2
.core 0
.storage 128
.input  x S:0x0<3x4xf32> slice=0:0:3 of 4x4
.output y S:0x40<2x4xf32> slice=0:0:2 of 4x4
.text
DAU0 LOAD N:0x0<2x4xf32> <- S:0x0<2x4xf32>
DAU0 STORE S:0x40<2x4xf32> <- N:0x0<2x4xf32>
.core 1
.storage 128
.input  x S:0x0<3x4xf32> slice=0:1:4 of 4x4
.output y S:0x40<2x4xf32> slice=0:2:4 of 4x4
.text
DAU0 LOAD N:0x0<2x4xf32> <- S:0x10<2x4xf32>
DAU0 STORE S:0x40<2x4xf32> <- N:0x0<2x4xf32>
