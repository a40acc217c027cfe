// --load-pass-plugin: the passes a Python file defines join the pipeline by name,
// with their options, in every pipeline syntax; broken plugins are one line, exit 1.

// Nested under func.func, with an option (an int given to a float option is accepted).
// RUN: nnx-opt %s --load-pass-plugin %S/Inputs/leaky_plugin.py --pass-pipeline='builtin.module(func.func(test-relu-to-leaky{alpha=2}))' | FileCheck %s
// xDSL's short form and mlir-opt's pass flag; the default alpha.
// RUN: nnx-opt %s --load-pass-plugin=%S/Inputs/leaky_plugin.py -p test-relu-to-leaky | FileCheck %s --check-prefix=DEFAULT
// RUN: nnx-opt %s -load-pass-plugin %S/Inputs/leaky_plugin.py -test-relu-to-leaky=alpha=2 | FileCheck %s

// CHECK-LABEL: func.func @f
// CHECK:         graph.leaky_relu(%x) {alpha = 2.000000e+00 : f32}
// CHECK-NOT:     graph.relu
// DEFAULT:       graph.leaky_relu(%x) {alpha = 1.000000e-02 : f32}

// Without the plugin the pass is unknown; a missing plugin file is named.
// RUN: not nnx-opt %s -p test-relu-to-leaky 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: nnx-opt: error: -p: unknown pass 'test-relu-to-leaky'; valid passes:
// RUN: not nnx-opt %s --load-pass-plugin %S/Inputs/missing.py 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: Inputs/missing.py: error: cannot load pass plugin: no such file
// MISSING-NOT: Traceback

func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = graph.relu(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
