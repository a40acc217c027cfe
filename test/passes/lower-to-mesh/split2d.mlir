// lower-to-mesh: a 2-D split (docs/mesh.md, "2-D splits"). A 3 x 3 conv 64 -> 64
// (147 KiB of weights) on a 9 x 9 image, on a 6 x 6 mesh of 32 KiB cores
// (Inputs/mesh6x6-32k.toml): its input and its output (20.7 KB each) each exceed
// the 60 % of a core the partitioner plans to fill, so neither a split by output
// channels (every part holds the whole input) nor one along the input channels
// (every part holds a full-size partial output) fits. It is split over 4 x 4 parts:
// part (r, j) reads the relu's piece r (input channels 16r..16r+15), holds the
// weight block W[16j.., 16r..] and computes output channels 16j..16j+15; the partial
// sums of output piece j run along a chain of 4 cores. The first conv is split by
// output channels into 4 pieces, the relu follows it.

// RUN: nnx-opt %s -p 'lower-to-mesh{target="%S/Inputs/mesh6x6-32k.toml" schedule=stages placement=rowmajor asm="%t.s"}' | FileCheck %s
// RUN: FileCheck %s --check-prefix=ASM --input-file %t.s

// CHECK:      graph.conv
// CHECK-SAME: nnx.mesh.cores = array<i64: 0, 1, 2, 3>
// CHECK:      graph.relu
// CHECK-SAME: nnx.mesh.cores = array<i64: 4, 5, 6, 7>
// CHECK:      graph.conv
// CHECK-SAME: nnx.mesh.cores = array<i64: 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23>
// CHECK:      graph.relu
// CHECK-SAME: nnx.mesh.cores = array<i64: 24, 25, 26, 27>
// CHECK:      graph.global_average_pool
// CHECK-SAME: nnx.mesh.cores = array<i64: 24, 25, 26, 27>

// Relu piece r goes to part r of every chain (cores 8 + r, 12 + r, 16 + r, 20 + r),
// one multicast SEND.
// ASM:      .core 4
// ASM-NOT:  .core
// ASM:      SEND {{ *}}@{8,12,16,20}:v1r0p0 <- S:{{.*}}<1x16x9x9xf32>

// Chain 0 (cores 8-11): each part receives one relu piece and the running sum of
// output channels 0-15 only (16 x 9 x 9, not the whole 64-channel output), adds
// its own and passes it on (parts numbered 4, 5, 6 from the 4 output pieces on);
// the last part holds output piece 0 (message `v2r0p0`, as for an output split)
// and sends it to the relu part beside the pool.
// ASM:      .core 8
// ASM-NOT:  .core
// ASM:      RECV {{.*}}<1x16x9x9xf32> <- @4:v1r0p0
// ASM-NOT:  RECV
// ASM:      SEND @9:v2r0p4 <- S:{{.*}}<1x16x9x9xf32>
// ASM:      .core 9
// ASM-NOT:  .core
// ASM:      RECV {{.*}}<1x16x9x9xf32> <- @5:v1r0p1
// ASM:      RECV {{.*}}<1x16x9x9xf32> <- @8:v2r0p4
// ASM:      SEND @10:v2r0p5 <- S:{{.*}}<1x16x9x9xf32>
// ASM:      .core 10
// ASM-NOT:  .core
// ASM:      RECV {{.*}}<1x16x9x9xf32> <- @9:v2r0p5
// ASM:      SEND @11:v2r0p6 <- S:{{.*}}<1x16x9x9xf32>
// ASM:      .core 11
// ASM-NOT:  .core
// ASM:      RECV {{.*}}<1x16x9x9xf32> <- @7:v1r0p3
// ASM:      RECV {{.*}}<1x16x9x9xf32> <- @10:v2r0p6
// ASM:      SEND @24:v2r0p0 <- S:{{.*}}<1x16x9x9xf32>

// Chain 3 (cores 20-23) ends with output piece 3 on core 23.
// ASM:      .core 23
// ASM-NOT:  .core
// ASM:      RECV {{.*}}<1x16x9x9xf32> <- @22:v2r0p15
// ASM:      SEND @27:v2r0p3 <- S:{{.*}}<1x16x9x9xf32>
// ASM:      .core 27
// ASM:      .output y S:{{.*}}<1x64x1x1xf32>
// ASM:      RECV {{.*}}<1x16x9x9xf32> <- @23:v2r0p3
// ASM-NOT:  .core 28

func.func @main(%x: tensor<1x16x9x9xf32> {nnx.name = "x"}) -> (tensor<1x64x1x1xf32> {nnx.name = "y"}) {
  %w1 = graph.constant dense<0.01> : tensor<64x16x3x3xf32>
  %w2 = graph.constant dense<0.02> : tensor<64x64x3x3xf32>
  %b2 = graph.constant dense<0.5> : tensor<64xf32>
  %a = graph.conv(%x, %w1) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x9x9xf32>, tensor<64x16x3x3xf32>) -> tensor<1x64x9x9xf32>
  %r = graph.relu(%a) : (tensor<1x64x9x9xf32>) -> tensor<1x64x9x9xf32>
  %c = graph.conv(%r, %w2, %b2) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x9x9xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x9x9xf32>
  %cr = graph.relu(%c) : (tensor<1x64x9x9xf32>) -> tensor<1x64x9x9xf32>
  %y = graph.global_average_pool(%cr) : (tensor<1x64x9x9xf32>) -> tensor<1x64x1x1xf32>
  func.return %y : tensor<1x64x1x1xf32>
}
