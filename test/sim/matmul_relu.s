; A small y = relu(x @ w) across DAU, MPU and VPU with tokens; runs through nnx-run.
; RUN: %python -c "import numpy as np; np.save('%t.x.npy', np.ones((4,8),'f4')); np.save('%t.w.npy', np.full((8,4),-0.5,'f4'))"
; RUN: nnx-run %s --input x=%t.x.npy --input w=%t.w.npy --output-dir %t.out --report %t.json --trace %t.trace.json
; RUN: FileCheck %s --check-prefix=REPORT < %t.json
; RUN: %python -c "import numpy as np; y=np.load('%t.out/y.npy'); assert (y==0).all(), y; print('ok')" | FileCheck %s --check-prefix=OUT
; RUN: %python -c "import json; t=json.load(open('%t.trace.json')); print(sorted({e['args']['name'] for e in t['traceEvents'] if e['name']=='thread_name'}))" | FileCheck %s --check-prefix=TRACE
; REPORT: "cycles":
; REPORT: "MPU0": {
; REPORT-NEXT: "busy_cycles": 17,
; REPORT: "bytes_moved": 320,
; REPORT: "macs": 128,
; REPORT-NEXT: "macs_skipped": 0,
; OUT: ok
; TRACE: ['DAU0', 'ICU', 'MAP0', 'MPU0', 'VPU0']
.storage 320
.input x S:0x0<4x8xf32>
.input w S:0x80<8x4xf32>
.output y S:0x100<4x4xf32>
.text
DAU0 LOAD N:0x0<4x8xf32> <- S:0x0<4x8xf32>
DAU0 LOAD W:0x0<8x4xf32> <- S:0x80<8x4xf32>
DAU0 SIGNAL loaded
MPU0 WAIT loaded
MPU0 MatMul O:0x0<4x4xf32> <- N:0x0<4x8xf32>, W:0x0<8x4xf32>
MPU0 SIGNAL mm
VPU0 WAIT mm
VPU0 Relu O:0x0<4x4xf32> <- O:0x0<4x4xf32>   ; in place
VPU0 SIGNAL act
DAU0 WAIT act
DAU0 STORE S:0x100<4x4xf32> <- O:0x0<4x4xf32>
