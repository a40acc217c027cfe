// Every chip op round-trips through the custom and the generic form.
// RUN: nnx-opt %s | FileCheck %s
// RUN: nnx-opt %s --mlir-print-op-generic | nnx-opt - | FileCheck %s

// CHECK:      chip.program {storage_bytes = 12288 : i64, target = "nnx-default"} {
// CHECK-NEXT:   chip.input @x #chip.tile<S:0x0, 8x64xf32>
// CHECK-NEXT:   chip.const @w #chip.tile<S:0x800, 2x2xf32> = dense<{{.*}}> : tensor<2x2xf32>
// CHECK-NEXT:   chip.output @y #chip.tile<S:0x2800, 8x32xf32>
// CHECK-NEXT:   chip.load DAU0 #chip.tile<N:0x0, 4x64xf32> <- #chip.tile<S:0x0, 4x64xf32, [64, 1]>
// CHECK-NEXT:   chip.store DAU0 #chip.tile<S:0x2800, 4x32xf32> <- #chip.tile<O:0x0, 4x32xf32>
// CHECK-NEXT:   chip.move DAU0 #chip.tile<N:0x400, 4x32xf32> <- #chip.tile<O:0x0, 4x32xf32>
// CHECK-NEXT:   chip.signal DAU0 ld0
// CHECK-NEXT:   chip.wait MPU0 ld0
// CHECK-NEXT:   chip.mpu MatMul MPU0 #chip.tile<O:0x0, 4x32xf32> <- #chip.tile<N:0x0, 4x64xf32>, #chip.tile<W:0x0, 64x32xf32> {acc}
// CHECK-NEXT:   chip.mpu Conv MPU0 #chip.tile<O:0x0, 1x8x4x4xf32> <- #chip.tile<N:0x0, 1x3x6x6xf32>, #chip.tile<W:0x0, 8x3x3x3xf32>, none {params = {strides = array<i64: 1, 1>}, wmask = #chip.tile<W:0x400, 8x3x3x3xui8>}
// CHECK-NEXT:   chip.vpu Relu VPU0 #chip.tile<O:0x0, 4x32xf32> <- #chip.tile<O:0x0, 4x32xf32>
// CHECK-NEXT:   chip.vpu Split VPU0 #chip.tile<O:0x0, 2x32xf32>, #chip.tile<O:0x100, 2x32xf32> <- #chip.tile<O:0x200, 4x32xf32> {params = {axis = 0 : i64}}
// CHECK-NEXT:   chip.fill VPU0 #chip.tile<O:0x0, 4x32xf32> {params = {value = 0.000000e+00 : f32}}
// CHECK-NEXT:   chip.conn MAP0 #chip.tile<N:0x800, 4x64xi32> <- #chip.tile<N:0x0, 4x64xf32> {params = {threshold = 0.000000e+00 : f32}}
// CHECK-NEXT:   chip.convert MAP0 #chip.tile<N:0x1800, 4x64xui8> <- #chip.tile<N:0x800, 4x64xi32>
// CHECK-NEXT:   chip.combine MAP0 #chip.tile<N:0x1c00, 4x64xui8> <- #chip.tile<N:0x1800, 4x64xui8>, #chip.tile<W:0x2000, 64xui8>
// CHECK-NEXT:   chip.expand MAP0 #chip.tile<W:0x0, 4x64xf32> <- #chip.tile<W:0x1000, 256xf32>, #chip.tile<N:0x1c00, 4x64xui8>
// CHECK-NEXT:   chip.compact MAP0 #chip.tile<O:0x0, 256xf32> <- #chip.tile<W:0x0, 4x64xf32>, #chip.tile<N:0x1c00, 4x64xui8>
// CHECK-NEXT: }
builtin.module {
  chip.program {storage_bytes = 12288 : i64, target = "nnx-default"} {
    chip.input @x #chip.tile<S:0x0, 8x64xf32>
    chip.const @w #chip.tile<S:0x800, 2x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    chip.output @y #chip.tile<S:0x2800, 8x32xf32>
    chip.load DAU0 #chip.tile<N:0x0, 4x64xf32> <- #chip.tile<S:0x0, 4x64xf32, [64, 1]>
    chip.store DAU0 #chip.tile<S:0x2800, 4x32xf32> <- #chip.tile<O:0, 4x32xf32>
    chip.move DAU0 #chip.tile<N:1024, 4x32xf32> <- #chip.tile<O:0x0, 4x32xf32>
    chip.signal DAU0 ld0
    chip.wait MPU0 ld0
    chip.mpu MatMul MPU0 #chip.tile<O:0x0, 4x32xf32> <- #chip.tile<N:0x0, 4x64xf32>, #chip.tile<W:0x0, 64x32xf32> {acc}
    chip.mpu Conv MPU0 #chip.tile<O:0x0, 1x8x4x4xf32> <- #chip.tile<N:0x0, 1x3x6x6xf32>, #chip.tile<W:0x0, 8x3x3x3xf32>, none {params = {strides = array<i64: 1, 1>}, wmask = #chip.tile<W:0x400, 8x3x3x3xui8>}
    chip.vpu Relu VPU0 #chip.tile<O:0x0, 4x32xf32> <- #chip.tile<O:0x0, 4x32xf32>
    chip.vpu Split VPU0 #chip.tile<O:0x0, 2x32xf32>, #chip.tile<O:0x100, 2x32xf32> <- #chip.tile<O:0x200, 4x32xf32> {params = {axis = 0 : i64}}
    chip.fill VPU0 #chip.tile<O:0x0, 4x32xf32> {params = {value = 0.0 : f32}}
    chip.conn MAP0 #chip.tile<N:0x800, 4x64xi32> <- #chip.tile<N:0x0, 4x64xf32> {params = {threshold = 0.0 : f32}}
    chip.convert MAP0 #chip.tile<N:0x1800, 4x64xui8> <- #chip.tile<N:0x800, 4x64xi32>
    chip.combine MAP0 #chip.tile<N:0x1c00, 4x64xui8> <- #chip.tile<N:0x1800, 4x64xui8>, #chip.tile<W:0x2000, 64xui8>
    chip.expand MAP0 #chip.tile<W:0x0, 4x64xf32> <- #chip.tile<W:0x1000, 256xf32>, #chip.tile<N:0x1c00, 4x64xui8>
    chip.compact MAP0 #chip.tile<O:0x0, 256xf32> <- #chip.tile<W:0x0, 4x64xf32>, #chip.tile<N:0x1c00, 4x64xui8>
  }
}
