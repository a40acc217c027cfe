// nnx-compile completes the pipeline it is given (nnx.api.compile_pipeline): the
// lowering is appended when no pass lowers to the chip dialect, the target goes to
// every pass with a `target` option, sparsify is inserted before the lowering, and
// plugin passes join by name.

// RUN: nnx-compile --print-pipeline | FileCheck %s --check-prefix=DEFAULT
// DEFAULT: builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce,lower-to-chip)

// RUN: nnx-compile --print-pipeline --pipeline 'canonicalize,dce' --target %S/../../passes/lower-to-chip/Inputs/tiny.toml --sparsify 'weight-threshold=0.5' | FileCheck %s --check-prefix=COMPLETED
// COMPLETED: builtin.module(canonicalize,dce,sparsify{weight-threshold=0.5},lower-to-chip{target="{{.*}}tiny.toml"})

// A lowering with its own target keeps it.
// RUN: nnx-compile --print-pipeline --pipeline 'builtin.module(lower-to-chip{target="a.toml" chain=false})' --target b.toml | FileCheck %s --check-prefix=OWN
// OWN: builtin.module(lower-to-chip{target="a.toml" chain=false})

// RUN: nnx-compile --print-pipeline --load-pass-plugin %S/../nnx-opt/Inputs/leaky_plugin.py --pipeline 'func.func(test-relu-to-leaky{alpha=0.5})' | FileCheck %s --check-prefix=PLUGIN
// PLUGIN: builtin.module(func.func(test-relu-to-leaky{alpha=0.5}),lower-to-chip)

// RUN: not nnx-compile --print-pipeline --pipeline 'func.func(test-relu-to-leaky)' 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// NOPLUGIN: nnx-compile: error: --pipeline: unknown pass 'test-relu-to-leaky'; valid passes:
// NOPLUGIN-NOT: Traceback
