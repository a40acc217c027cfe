// Every tool reports a user mistake in one line and exits with status 1 (nnx/cli.py);
// `not` checks the non-zero status; X-NOT before the message rules out a traceback,
// X-NOT: {{.}} after it any second line.

// RUN: not nnx-opt %t.missing.mlir 2>&1 | FileCheck %s --check-prefix=OPT
// OPT-NOT: Traceback
// OPT: missing.mlir: error: cannot read: No such file or directory{{.*}}
// OPT-NOT: {{.}}
// RUN: not nnx-import %t.missing.onnx 2>&1 | FileCheck %s --check-prefix=IMPORT
// IMPORT-NOT: Traceback
// IMPORT: nnx-import: error: {{.*}}missing.onnx: no such file{{.*}}
// IMPORT-NOT: {{.}}
// RUN: not nnx-compile %t.missing.onnx -o %t.s 2>&1 | FileCheck %s --check-prefix=COMPILE
// COMPILE-NOT: Traceback
// COMPILE: nnx-compile: error: {{.*}}missing.onnx: no such file{{.*}}
// COMPILE-NOT: {{.}}
// RUN: not nnx-translate --to-asm %s 2>&1 | FileCheck %s --check-prefix=TRANSLATE
// TRANSLATE-NOT: Traceback
// TRANSLATE: one-line.mlir: error: expected one chip.program, found 0{{.*}}
// TRANSLATE-NOT: {{.}}
// RUN: not nnx-run --interpret %s --input x=%t.missing.npy 2>&1 | FileCheck %s --check-prefix=INTERP
// INTERP-NOT: Traceback
// INTERP: nnx-run: error: {{.*}}missing.npy: no such file{{.*}}
// INTERP-NOT: {{.}}
// RUN: not nnx-run %t.missing.s 2>&1 | FileCheck %s --check-prefix=SIM
// SIM-NOT: Traceback
// SIM: missing.s: error: cannot read: No such file or directory{{.*}}
// SIM-NOT: {{.}}
// RUN: not nnx-map %t.missing.npz -o %t.npy --mesh 2x2 --capacity 4 2>&1 | FileCheck %s --check-prefix=MAP
// MAP-NOT: Traceback
// MAP: nnx-map: error: {{.*}}missing.npz{{.*}}
// MAP-NOT: {{.}}
// RUN: not nnx-topo info %t.missing.zip 2>&1 | FileCheck %s --check-prefix=TOPO
// TOPO-NOT: Traceback
// TOPO: nnx-topo: error: {{.*}}missing.zip{{.*}}
// TOPO-NOT: {{.}}
// An unknown option: argparse's message, one line, exit 1 (not argparse's 2).
// RUN: not nnx-compile --frobnicate 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG-NOT: Traceback
// FLAG: nnx-compile: error: unrecognized arguments: --frobnicate (see nnx-compile --help){{.*}}
// FLAG-NOT: {{.}}

func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
