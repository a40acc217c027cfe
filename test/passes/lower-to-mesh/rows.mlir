// lower-to-mesh: splits by image rows (docs/mesh.md, "Compilation", "Row splits").
// Two 3 x 3 convs (pad 1; the second with stride 2) and a relu on a 96 x 96 image,
// on a 4 x 4 mesh of 512 KiB cores. Their activations (147-295 KiB) outweigh their
// weights (1-2 KiB), so they are split by output rows, not output channels: a part
// holds its band of input rows (plus the kernel's halo) and of output rows, and the
// weights whole. The first conv (the whole 147 KiB input, its band and 1/k of the
// 295 KiB output must fit 60 % of a core) takes 3 parts of 32 rows; the relu
// follows them piecewise; the strided conv, fed by row pieces, takes 3 parts too,
// of 16 output rows, part j reading input rows [32j - 1, 32j + 32): its own relu
// piece and one halo row from the piece before (part 0's top row is padding).

// RUN: nnx-opt %s -p 'lower-to-mesh{target="%S/Inputs/mesh4x4.toml" schedule=stages placement=rowmajor asm="%t.s"}' | FileCheck %s
// RUN: FileCheck %s --check-prefix=ASM --input-file %t.s

// CHECK:      graph.conv
// CHECK-SAME: nnx.mesh.cores = array<i64: 0, 1, 2>
// CHECK:      graph.relu
// CHECK-SAME: nnx.mesh.cores = array<i64: 3, 4, 5>
// CHECK:      graph.conv
// CHECK-SAME: nnx.mesh.cores = array<i64: 6, 7, 8>

// The first conv's parts read the graph input (each slices its band) and send 32
// rows each. A relu part sends its whole piece to the strided conv part of the same
// rows and only its last row to the next part (tag `w<first>_<end>`: a band of a
// piece, sliced on the sender). The part of the first rows (core 6) also assembles
// the graph output from the three 16-row pieces.
// ASM:      .core 0
// ASM:      .input x S:{{.*}}<1x4x96x96xf32>
// ASM:      SEND @3:v0r0p0 <- S:{{.*}}<1x8x32x96xf32>
// ASM:      .core 1
// ASM:      SEND @4:v0r0p1 <- S:{{.*}}<1x8x32x96xf32>
// ASM:      .core 2
// ASM:      SEND @5:v0r0p2 <- S:{{.*}}<1x8x32x96xf32>
// ASM:      .core 3
// ASM:      RECV {{.*}}<1x8x32x96xf32> <- @0:v0r0p0
// ASM:      SEND @6:v1r0p0 <- S:{{.*}}<1x8x32x96xf32>
// ASM:      SEND @7:v1r0p0w31_32 <- S:{{.*}}<1x8x1x96xf32>
// ASM:      .core 4
// ASM:      SEND @7:v1r0p1 <- S:{{.*}}<1x8x32x96xf32>
// ASM:      SEND @8:v1r0p1w63_64 <- S:{{.*}}<1x8x1x96xf32>
// ASM:      .core 5
// ASM:      SEND @8:v1r0p2 <- S:{{.*}}<1x8x32x96xf32>
// ASM:      .core 6
// ASM:      .output y S:{{.*}}<1x8x48x48xf32>
// ASM:      RECV {{.*}}<1x8x32x96xf32> <- @3:v1r0p0
// ASM:      RECV {{.*}}<1x8x16x48xf32> <- @7:v2r0p1
// ASM:      RECV {{.*}}<1x8x16x48xf32> <- @8:v2r0p2
// ASM:      .core 7
// ASM:      RECV {{.*}}<1x8x1x96xf32> <- @3:v1r0p0w31_32
// ASM:      RECV {{.*}}<1x8x32x96xf32> <- @4:v1r0p1
// ASM:      SEND @6:v2r0p1 <- S:{{.*}}<1x8x16x48xf32>
// ASM:      .core 8
// ASM:      RECV {{.*}}<1x8x1x96xf32> <- @4:v1r0p1w63_64
// ASM:      SEND @6:v2r0p2 <- S:{{.*}}<1x8x16x48xf32>
// ASM-NOT:  .core 9

func.func @main(%x: tensor<1x4x96x96xf32> {nnx.name = "x"}) -> (tensor<1x8x48x48xf32> {nnx.name = "y"}) {
  %w1 = graph.constant dense<0.01> : tensor<8x4x3x3xf32>
  %w2 = graph.constant dense<0.02> : tensor<8x8x3x3xf32>
  %h = graph.conv(%x, %w1) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x96x96xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x96x96xf32>
  %r = graph.relu(%h) : (tensor<1x8x96x96xf32>) -> tensor<1x8x96x96xf32>
  %y = graph.conv(%r, %w2) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x96x96xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x48x48xf32>
  func.return %y : tensor<1x8x48x48xf32>
}
