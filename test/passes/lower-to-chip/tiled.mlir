// RUN: nnx-opt %s -p 'lower-to-chip{target="%S/Inputs/tiny.toml"}' | FileCheck %s
// RUN: nnx-opt %s -p 'lower-to-chip{target="%S/Inputs/tiny.toml" double-buffer=false}' | FileCheck %s --check-prefix=SINGLE

// Inputs/tiny.toml has 4 KiB caches: neither the 1024x16 weight (64 KiB) nor one
// 1024-element row of x fits, so the matmul is tiled over N and M and its reduction
// K is split into chunks accumulated in the output cache (`acc`). Operands alternate
// between two buffers (double buffering): the next chunk's DMA overlaps this chunk's
// MPU work, and the store of an output tile is issued after the next tile's loads.
// CHECK:       chip.program {{.*}}target = "nnx-tiny"
// CHECK:       chip.load DAU0 #chip.tile<N:0x0, 1x512xf32> <- #chip.tile<S:[[X:0x[0-9a-f]+]], 1x512xf32>
// CHECK-NEXT:  chip.load DAU0 #chip.tile<W:0x0, 512x1xf32> <- #chip.tile<S:0x0, 512x1xf32, [16, 1]>
// CHECK:       chip.mpu MatMul MPU0 #chip.tile<O:0x0, 1x1xf32> <- #chip.tile<N:0x0, 1x512xf32>, #chip.tile<W:0x0, 512x1xf32>{{$}}
// CHECK:       chip.load DAU0 #chip.tile<N:0x800, 1x512xf32>
// CHECK-NEXT:  chip.load DAU0 #chip.tile<W:0x800, 512x1xf32> <- #chip.tile<S:0x8000, 512x1xf32, [16, 1]>
// CHECK:       chip.mpu MatMul MPU0 #chip.tile<O:0x0, 1x1xf32> <- #chip.tile<N:0x800, 1x512xf32>, #chip.tile<W:0x800, 512x1xf32> {acc}
// CHECK:       chip.load DAU0 #chip.tile<N:0x0, 1x512xf32>
// CHECK:       chip.store DAU0 #chip.tile<S:[[Y:0x[0-9a-f]+]], 1x1xf32> <- #chip.tile<O:0x0, 1x1xf32>
// CHECK:       chip.mpu MatMul MPU0 #chip.tile<O:0x40, 1x1xf32>
// CHECK-COUNT-61: chip.mpu MatMul
// CHECK-NOT:   chip.mpu
// SINGLE:      chip.program
// SINGLE-NOT:  #chip.tile<O:0x40
// single buffers fit bigger tiles (2x2 outputs, still 512-element K chunks)
// SINGLE:      chip.mpu MatMul MPU0 #chip.tile<O:0x0, 2x2xf32> <- #chip.tile<N:0x0, 2x512xf32>, #chip.tile<W:0x0, 512x2xf32> {acc}
func.func @main(%x: tensor<2x1024xf32> {nnx.name = "x"}) -> (tensor<2x16xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<0.125> : tensor<1024x16xf32>
  %y = graph.matmul(%x, %w) : (tensor<2x1024xf32>, tensor<1024x16xf32>) -> tensor<2x16xf32>
  func.return %y : tensor<2x16xf32>
}
