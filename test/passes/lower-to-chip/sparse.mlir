// RUN: nnx-opt %s -p 'sparsify{weight-threshold=0.3},lower-to-chip' | FileCheck %s
// RUN: nnx-opt %s -p 'sparsify{weight-threshold=0.3 index-form=stride neuron-threshold=0.0},lower-to-chip' | FileCheck %s --check-prefix=STRIDE

// docs/sparse-mapping.md, section 5: the pruned weights travel and stay compacted in the weight cache (only the
// 5 of 12 survivors) beside their connection data. Here the stride index (5 x i16 =
// 10 bytes) is cheaper than the direct one (12 bytes), so the strides travel -- in the
// same constant and the same DMA as the values (20 + 10 bytes) -- and the mapping unit
// CONVERTs them to the direct index; the MPU reads the packed values (1-D source #1)
// with that full-shape index as `wmask` and computes on surviving pairs only.
// CHECK-NOT:   chip.const @w #chip.tile<S:{{.*}}3x4xf32>
// CHECK:       chip.const @wpk #chip.tile<S:[[C:0x[0-9a-f]+]], 30xui8> = dense_resource<[[R:wpk[_0-9]*]]> : tensor<30xui8>
// CHECK:       chip.load DAU0 #chip.tile<W:0x0, 30xui8> <- #chip.tile<S:[[C]], 30xui8>
// CHECK:       chip.wait MAP0
// CHECK-NEXT:  chip.convert MAP0 #chip.tile<W:[[M:0x[0-9a-f]+]], 12xui8> <- #chip.tile<W:0x14, 5xi16>
// CHECK-NOT:   chip.expand
// CHECK:       chip.mpu Gemm MPU0 #chip.tile<O:0x0, 1x3xf32> <- #chip.tile<N:0x0, 1x4xf32>, #chip.tile<W:0x0, 5xf32>, #chip.tile<W:{{0x[0-9a-f]+}}, 3xf32> {params = {transB = 1 : i64}, wmask = #chip.tile<W:[[M]], 3x4xui8>}
// values 1, 0.5, -2, 1.5, -1 (f32) then the strides 0, 2, 2, 3, 2 (i16):
// CHECK:       [[R]]: "0x010000000000803f0000003f000000c00000c03f000080bf00000200020003000200"

// The stride form in the IR and neuron connection data (|x| > 0) built by CONN on the
// loaded neurons (nmask).
// STRIDE:      chip.const @wpk #chip.tile<S:{{0x[0-9a-f]+}}, 30xui8>
// STRIDE:      chip.conn MAP0 #chip.tile<N:[[NM:0x[0-9a-f]+]], 1x4xi1> <- #chip.tile<N:0x0, 1x4xf32> {params = {threshold = 0.000000e+00 : f32}}
// STRIDE:      chip.load DAU0 #chip.tile<W:0x0, 30xui8>
// STRIDE:      chip.convert MAP0 #chip.tile<W:[[M:0x[0-9a-f]+]], 12xui8> <- #chip.tile<W:0x14, 5xi16>
// STRIDE:      chip.mpu Gemm MPU0 {{.*}} {params = {transB = 1 : i64}, nmask = #chip.tile<N:[[NM]], 1x4xi1>, wmask = #chip.tile<W:[[M]], 3x4xui8>}
func.func @main(%x: tensor<1x4xf32> {nnx.name = "x"}) -> (tensor<1x3xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<[[1.0, 0.1, 0.5, 0.0], [-2.0, 0.2, 0.0, 1.5], [0.0, -1.0, 0.25, 0.3]]> : tensor<3x4xf32>
  %b = graph.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %y = graph.gemm(%x, %w, %b) {transB = 1 : i64} : (tensor<1x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  func.return %y : tensor<1x3xf32>
}
