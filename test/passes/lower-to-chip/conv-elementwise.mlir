// RUN: nnx-opt %s -p lower-to-chip | FileCheck %s

// Conv on the MPU with its ONNX attributes; the broadcasting add of a [16,1,1]
// constant is applied by the VPU in the output cache (epilogue) with the constant
// loaded into the weight cache; the reshape is an alias (no instructions: the output
// symbol is the add's storage).
// CHECK:       chip.input @image #chip.tile<S:[[IN:0x[0-9a-f]+]], 1x3x8x8xf32>
// CHECK:       chip.const @conv.w #chip.tile<S:0x0, 16x3x3x3xf32> = dense<5.000000e-01> : tensor<16x3x3x3xf32>
// CHECK:       chip.const @w #chip.tile<S:[[B:0x[0-9a-f]+]], 16x1x1xf32>
// CHECK:       chip.output @out #chip.tile<S:[[OUT:0x[0-9a-f]+]], 1x1024xf32>
// CHECK:       chip.load DAU0 #chip.tile<N:0x0, 1x3x8x8xf32> <- #chip.tile<S:[[IN]], 1x3x8x8xf32>
// CHECK:       chip.load DAU0 #chip.tile<W:0x0, 16x3x3x3xf32> <- #chip.tile<S:0x0, 16x3x3x3xf32>
// CHECK:       chip.mpu Conv MPU0 #chip.tile<O:0x0, 1x16x8x8xf32> <- #chip.tile<N:0x0, 1x3x8x8xf32>, #chip.tile<W:0x0, 16x3x3x3xf32> {params = {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}}
// CHECK:       chip.load DAU0 #chip.tile<W:[[WB:0x[0-9a-f]+]], 16x1x1xf32> <- #chip.tile<S:[[B]], 16x1x1xf32>
// CHECK:       chip.vpu Add VPU0 #chip.tile<O:0x0, 1x16x8x8xf32> <- #chip.tile<O:0x0, 1x16x8x8xf32>, #chip.tile<W:[[WB]], 16x1x1xf32>
// CHECK:       chip.store DAU0 #chip.tile<S:[[OUT]], 1x16x8x8xf32> <- #chip.tile<O:0x0, 1x16x8x8xf32>
// CHECK-NOT:   chip.{{load|store|mpu|vpu}}
func.func @main(%x: tensor<1x3x8x8xf32> {nnx.name = "image"}) -> (tensor<1x1024xf32> {nnx.name = "out"}) {
  %w = graph.constant dense<0.5> : tensor<16x3x3x3xf32> loc("conv.w")
  %c = graph.conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %b = graph.constant dense<0.25> : tensor<16x1x1xf32>
  %a = graph.add(%c, %b) : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %s = graph.constant dense<[1, 1024]> : tensor<2xi64>
  %r = graph.reshape(%a, %s) : (tensor<1x16x8x8xf32>, tensor<2xi64>) -> tensor<1x1024xf32>
  func.return %r : tensor<1x1024xf32>
}
