// RUN: nnx-opt %s -p 'lower-to-chip{target="%S/Inputs/tiny.toml"}' | FileCheck %s
// RUN: nnx-opt %s -p 'lower-to-chip{target="%S/Inputs/tiny.toml" double-buffer=false}' | FileCheck %s --check-prefix=SINGLE

// Inputs/tiny.toml has 4 KiB caches: neither the 1024x16 weight (64 KiB) nor one
// 1024-element row of x fits, so the matmul's reduction K is split into chunks
// accumulated in the output cache (`acc`). The cost-based planner keeps the whole
// 2x16 output in the output cache so that every byte of x and w travels once (32
// chunks of K = 32) instead of tiling N and M (which would reload x per N tile).
// Operands alternate between two buffers (double buffering): the next chunk's DMA
// overlaps this chunk's MPU work.
// CHECK:       chip.program {{.*}}target = "nnx-tiny"
// CHECK:       chip.load DAU0 #chip.tile<N:0x0, 2x32xf32> <- #chip.tile<S:[[X:0x[0-9a-f]+]], 2x32xf32, [1024, 1]>
// CHECK-NEXT:  chip.load DAU0 #chip.tile<W:0x0, 32x16xf32> <- #chip.tile<S:0x0, 32x16xf32>
// CHECK:       chip.mpu MatMul MPU0 #chip.tile<O:0x0, 2x16xf32> <- #chip.tile<N:0x0, 2x32xf32>, #chip.tile<W:0x0, 32x16xf32>{{$}}
// CHECK:       chip.load DAU0 #chip.tile<N:0x100, 2x32xf32>
// CHECK-NEXT:  chip.load DAU0 #chip.tile<W:0x800, 32x16xf32> <- #chip.tile<S:0x800, 32x16xf32>
// CHECK:       chip.mpu MatMul MPU0 #chip.tile<O:0x0, 2x16xf32> <- #chip.tile<N:0x100, 2x32xf32>, #chip.tile<W:0x800, 32x16xf32> {acc}
// CHECK-COUNT-30: chip.mpu MatMul
// CHECK-NOT:   chip.mpu
// CHECK:       chip.store DAU0 #chip.tile<S:[[Y:0x[0-9a-f]+]], 2x16xf32> <- #chip.tile<O:0x0, 2x16xf32>
// SINGLE:      chip.program
// SINGLE-NOT:  #chip.tile<N:0x100
// single buffers fit bigger chunks (K = 64)
// SINGLE:      chip.mpu MatMul MPU0 #chip.tile<O:0x0, 2x16xf32> <- #chip.tile<N:0x0, 2x64xf32>, #chip.tile<W:0x0, 64x16xf32>{{$}}
func.func @main(%x: tensor<2x1024xf32> {nnx.name = "x"}) -> (tensor<2x16xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<0.125> : tensor<1024x16xf32>
  %y = graph.matmul(%x, %w) : (tensor<2x1024xf32>, tensor<1024x16xf32>) -> tensor<2x16xf32>
  func.return %y : tensor<2x16xf32>
}
