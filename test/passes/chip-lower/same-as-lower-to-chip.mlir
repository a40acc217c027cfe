// The chip passes run one by one (after the graph rewrites graph-hoist-addends and
// graph-transpose-views, which lower-to-chip runs first with schedule=true) print the
// same assembly (and data image) as the composite lower-to-chip, on the lower-to-chip
// suite's inputs: chaining, tiling on
// a tiny-cache target, sparse weights with stride connection data, a Transpose view,
// an accumulator initialised from an Add, a bias-Gemm, an embedding Gather, and the
// unscheduled path (schedule=false: no chip-schedule). keep-faster=false: the composite
// keeps its scheduled program (by default it keeps the faster of that and the
// unscheduled one, docs/topological-order.md).
// RUN: rm -rf %t && mkdir -p %t/a %t/b
// RUN: nnx-opt %S/../lower-to-chip/chain.mlir -p 'lower-to-chip{keep-faster=false}' | nnx-translate --to-asm - -o %t/a/prog.s
// RUN: nnx-opt %S/../lower-to-chip/chain.mlir --pass-pipeline='builtin.module(graph-hoist-addends,graph-transpose-views,chip-lower,chip-allocate,chip-schedule,chip-sync)' | nnx-translate --to-asm - -o %t/b/prog.s
// RUN: diff %t/a/prog.s %t/b/prog.s
// RUN: diff %t/a/prog.data %t/b/prog.data
// RUN: FileCheck %s --input-file=%t/b/prog.s
// chip-lower's output printed and parsed again (symbolic buffers, nnx.access) gives
// the same program: the IR between the passes is text like any other.
// RUN: nnx-opt %S/../lower-to-chip/chain.mlir -p graph-hoist-addends,graph-transpose-views,chip-lower | nnx-opt -p chip-allocate | nnx-opt -p chip-schedule,chip-sync | nnx-translate --to-asm - -o %t/b/prog.s
// RUN: diff %t/a/prog.s %t/b/prog.s
// RUN: diff %t/a/prog.data %t/b/prog.data
// chip-schedule works on symbolic storage as well (before chip-allocate): the same.
// RUN: nnx-opt %S/../lower-to-chip/chain.mlir -p graph-hoist-addends,graph-transpose-views,chip-lower,chip-schedule,chip-allocate,chip-sync | nnx-translate --to-asm - -o %t/b/prog.s
// RUN: diff %t/a/prog.s %t/b/prog.s
// RUN: nnx-opt %S/../lower-to-chip/tiled.mlir -p 'lower-to-chip{keep-faster=false target="%S/../lower-to-chip/Inputs/tiny.toml"}' | nnx-translate --to-asm - -o %t/a/prog.s
// RUN: nnx-opt %S/../lower-to-chip/tiled.mlir --pass-pipeline='builtin.module(graph-hoist-addends,graph-transpose-views,chip-lower{target="%S/../lower-to-chip/Inputs/tiny.toml"},chip-allocate,chip-schedule{target="%S/../lower-to-chip/Inputs/tiny.toml"},chip-sync)' | nnx-translate --to-asm - -o %t/b/prog.s
// RUN: diff %t/a/prog.s %t/b/prog.s
// RUN: nnx-opt %S/../lower-to-chip/sparse.mlir -p 'sparsify{weight-threshold=0.3 index-form=stride neuron-threshold=0.0},lower-to-chip{keep-faster=false}' | nnx-translate --to-asm - -o %t/a/prog.s
// RUN: nnx-opt %S/../lower-to-chip/sparse.mlir -p 'sparsify{weight-threshold=0.3 index-form=stride neuron-threshold=0.0},graph-hoist-addends,graph-transpose-views,chip-lower,chip-allocate,chip-schedule,chip-sync' | nnx-translate --to-asm - -o %t/b/prog.s
// RUN: diff %t/a/prog.s %t/b/prog.s
// RUN: nnx-opt %S/../lower-to-chip/transpose-view.mlir -p 'lower-to-chip{keep-faster=false}' | nnx-translate --to-asm - -o %t/a/prog.s
// RUN: nnx-opt %S/../lower-to-chip/transpose-view.mlir -p graph-hoist-addends,graph-transpose-views,chip-lower,chip-allocate,chip-schedule,chip-sync | nnx-translate --to-asm - -o %t/b/prog.s
// RUN: diff %t/a/prog.s %t/b/prog.s
// RUN: nnx-opt %S/../lower-to-chip/matmul-acc-init.mlir -p 'lower-to-chip{keep-faster=false}' | nnx-translate --to-asm - -o %t/a/prog.s
// RUN: nnx-opt %S/../lower-to-chip/matmul-acc-init.mlir -p graph-hoist-addends,graph-transpose-views,chip-lower,chip-allocate,chip-schedule,chip-sync | nnx-translate --to-asm - -o %t/b/prog.s
// RUN: diff %t/a/prog.s %t/b/prog.s
// RUN: nnx-opt %S/../lower-to-chip/matmul-bias.mlir -p 'lower-to-chip{keep-faster=false}' | nnx-translate --to-asm - -o %t/a/prog.s
// RUN: nnx-opt %S/../lower-to-chip/matmul-bias.mlir -p graph-hoist-addends,graph-transpose-views,chip-lower,chip-allocate,chip-schedule,chip-sync | nnx-translate --to-asm - -o %t/b/prog.s
// RUN: diff %t/a/prog.s %t/b/prog.s
// RUN: nnx-opt %S/../lower-to-chip/gather.mlir -p 'lower-to-chip{keep-faster=false}' | nnx-translate --to-asm - -o %t/a/prog.s
// RUN: nnx-opt %S/../lower-to-chip/gather.mlir -p graph-hoist-addends,graph-transpose-views,chip-lower,chip-allocate,chip-schedule,chip-sync | nnx-translate --to-asm - -o %t/b/prog.s
// RUN: diff %t/a/prog.s %t/b/prog.s
// RUN: nnx-opt %S/../lower-to-chip/chain.mlir -p 'lower-to-chip{schedule=false}' | nnx-translate --to-asm - -o %t/a/prog.s
// RUN: nnx-opt %S/../lower-to-chip/chain.mlir -p 'chip-lower{schedule=false},chip-allocate,chip-sync' | nnx-translate --to-asm - -o %t/b/prog.s
// RUN: diff %t/a/prog.s %t/b/prog.s
// The assembly is not empty (diff of two empty files would pass).
// RUN: FileCheck %s --input-file=%t/b/prog.s
// The assembly is not empty (a diff of two empty files would pass).
// CHECK: .text
// CHECK: MatMul
