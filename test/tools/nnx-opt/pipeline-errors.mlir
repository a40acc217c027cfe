// Mistakes in pipelines and options: one line naming what is valid, exit 1.

// RUN: not nnx-opt %s -p no-such-pass 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: nnx-opt: error: -p: unknown pass 'no-such-pass'; valid passes: {{.*}}canonicalize{{.*}}dce{{.*}}graph-fold-constants
// UNKNOWN-NOT: Traceback

// RUN: not nnx-opt %s --pass-pipeline='builtin.module(func.func(cse))' 2>&1 | FileCheck %s --check-prefix=NESTED
// NESTED: error: --pass-pipeline: unknown pass 'cse'; valid passes: {{.*}}graph-fold-constants

// RUN: not nnx-opt %s --pass-pipeline='builtin.module(graph-fold-constants{bogus=1})' 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: error: --pass-pipeline: pass 'graph-fold-constants' has no option 'bogus'; valid options: max-elements=<int> (default 1048576)

// RUN: not nnx-opt %s -p 'dce{x=1}' 2>&1 | FileCheck %s --check-prefix=NOOPTS
// NOOPTS: error: -p: pass 'dce' has no option 'x'; it takes no options

// RUN: not nnx-opt %s -p 'graph-fold-constants{max-elements=lots}' 2>&1 | FileCheck %s --check-prefix=VALUE
// VALUE: error: -p: option 'max-elements' of pass 'graph-fold-constants' expects int, got 'lots'

// RUN: not nnx-opt %s --pass-pipeline='builtin.module(func.func(dce)' 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: error: --pass-pipeline: expected ',' or ')' but the pipeline ended at column 30

// RUN: not nnx-opt %s --pass-pipeline='builtin.module(dce{x)' 2>&1 | FileCheck %s --check-prefix=BRACE
// BRACE: error: --pass-pipeline: '{' of the pass options is not closed at column 19

// RUN: not nnx-opt %s -p dce --pass-pipeline='builtin.module(dce)' 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: give the passes once: --pass-pipeline and -p were both given

// RUN: not nnx-opt %s --no-such-flag 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: nnx-opt: error: unrecognized arguments: --no-such-flag

// RUN: not nnx-opt %s.missing 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: pipeline-errors.mlir.missing: error: cannot read: No such file or directory

func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
