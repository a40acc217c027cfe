// RUN: nnx-opt %s --split-input-file -p chip-lower | FileCheck %s

// View-like ops (the `ViewLike` trait: Reshape, Flatten, Squeeze, Unsqueeze,
// Identity, an inference Dropout whose mask nobody reads) are aliases: no
// instruction, their readers read the operand's buffer with the new shape. Here the
// Sigmoid reads the Relu result still resident in the output cache, through the
// Dropout and the Reshape (2x16 tiles of the 4x8 buffer at O:0xfff80).
// CHECK-LABEL: chip.program
// CHECK:       chip.vpu Relu VPU0 #chip.tile<O:0xfff80, 4x8xf32>
// CHECK-NOT:   Dropout
// CHECK-NOT:   Reshape
// CHECK:       chip.vpu Sigmoid VPU0 {{.*}} <- #chip.tile<O:0xfff80, 2x8xf32, [16, 1]>
func.func @main(%x: tensor<4x8xf32> {nnx.name = "x"}) -> (tensor<2x16xf32> {nnx.name = "y"}) {
  %a = graph.relu(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = graph.dropout(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = graph.constant dense<[2, 16]> : tensor<2xi64>
  %r = graph.reshape(%d, %s) : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<2x16xf32>
  %y = graph.sigmoid(%r) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %y : tensor<2x16xf32>
}

// -----

// A Dropout whose mask output exists but is unused is still an alias; the mask gets
// an all-true constant buffer (never read) and no instruction computes anything.
// CHECK-LABEL: chip.program
// CHECK:       chip.const @mask #chip.tile<@t2:0x0, 4x8xi1>
// CHECK:       chip.vpu Relu VPU0 #chip.tile<O:0xfff80, 4x8xf32>
// CHECK-NOT:   Dropout
// CHECK:       chip.vpu Sigmoid VPU0 {{.*}} <- #chip.tile<O:0xfff80, 4x8xf32>
func.func @main(%x: tensor<4x8xf32> {nnx.name = "x"}) -> (tensor<4x8xf32> {nnx.name = "y"}) {
  %a = graph.relu(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %d, %m = graph.dropout(%a) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  %y = graph.sigmoid(%d) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// A Dropout whose mask is read (here returned) is no alias: it is a VPU op that
// writes both results.
// CHECK-LABEL: chip.program
// CHECK:       chip.vpu Relu VPU0
// CHECK-NEXT:  chip.vpu Dropout VPU0 #chip.tile<O:{{.*}}, 4x8xf32>, #chip.tile<O:{{.*}}, 4x8xi1> <- #chip.tile<O:0xfff80, 4x8xf32>
// CHECK-NEXT:  chip.store DAU0 #chip.tile<@t2:0x0, 4x8xf32>
// CHECK-NEXT:  chip.store DAU0 #chip.tile<@t3:0x0, 4x8xi1>
func.func @main(%x: tensor<4x8xf32> {nnx.name = "x"}) -> (tensor<4x8xf32> {nnx.name = "y"}, tensor<4x8xi1> {nnx.name = "m"}) {
  %a = graph.relu(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %d, %m = graph.dropout(%a) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  func.return %d, %m : tensor<4x8xf32>, tensor<4x8xi1>
}
