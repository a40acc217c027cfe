// Bad inputs end in one line `nnx-import: error: ...`, exit 1, and no output file.
// RUN: rm -rf %t && %python %S/make_models.py %t
// RUN: not nnx-import %t/unsupported.onnx -o %t/out.mlir 2>&1 | FileCheck %s --check-prefix=UNSUP
// RUN: not nnx-import %t/truncated.onnx -o %t/out.mlir 2>&1 | FileCheck %s --check-prefix=TRUNC
// RUN: not nnx-import %t/dynamic_left.onnx -o %t/out.mlir 2>&1 | FileCheck %s --check-prefix=DYN
// RUN: not nnx-import %t/mlp.onnx -o %t/out.mlir 2>&1 | FileCheck %s --check-prefix=BATCH
// RUN: not nnx-import %t/mlp.onnx --input-shape img=1x3x8x8 -o %t/out.mlir 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not nnx-import %t/mlp.onnx --input-shape image=1x3xfoo -o %t/out.mlir 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not nnx-import %t/missing.onnx -o %t/out.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not test -e %t/out.mlir

// UNSUP: nnx-import: error: unsupported op (custom operator domain) (node 'mystery', op com.example.Frobnicate)
// UNSUP-NOT: Traceback
// TRUNC: nnx-import: error: {{.*}}truncated.onnx: not a valid ONNX model (truncated or corrupt file
// DYN: nnx-import: error: result 'y' has a dynamic or unknown shape {{.*}} (node 'data_dependent_reshape', op Reshape)
// BATCH: nnx-import: error: graph input 'image' has dynamic dim 0 'N' (shape [?, 3, 8, 8]); fix it with --batch N or --input-shape image=...
// NAME: nnx-import: error: --input-shape names unknown input 'img' (the model's inputs: 'image')
// SHAPE: nnx-import: error: malformed --input-shape 'image=1x3xfoo'
// MISSING: nnx-import: error: {{.*}}missing.onnx: no such file
