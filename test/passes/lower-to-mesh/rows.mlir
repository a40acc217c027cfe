// lower-to-mesh: splits by image rows (docs/mesh.md, "Compilation", "Row splits").
// Two 3 x 3 convs (pad 1; the second with stride 2) and a relu on a 96 x 96 image,
// on a 4 x 4 mesh of 512 KiB cores. Their activations (147-295 KiB) outweigh their
// weights (1-2 KiB), so they are split by output rows, not output channels: a part
// holds its band of input rows (plus the kernel's halo) and of output rows, and the
// weights whole. The first conv (input + output 442 KiB > 60 % of a core) takes 2
// parts of 48 rows; the relu follows them piecewise; the strided conv takes 3 parts
// of 16 output rows, each reading input rows [32j - 1, 32j + 32) cut from the relu's
// pieces: part 0 rows 0-31 (its top row is the conv's padding), part 1 rows 31-63
// from both relu pieces (one row of halo from piece 0), part 2 rows 63-95.

// RUN: nnx-opt %s -p 'lower-to-mesh{target="%S/Inputs/mesh4x4.toml" placement=rowmajor asm="%t.s"}' | FileCheck %s
// RUN: FileCheck %s --check-prefix=ASM --input-file %t.s

// CHECK:      graph.conv
// CHECK-SAME: nnx.mesh.cores = array<i64: 0, 1>
// CHECK:      graph.relu
// CHECK-SAME: nnx.mesh.cores = array<i64: 2, 3>
// CHECK:      graph.conv
// CHECK-SAME: nnx.mesh.cores = array<i64: 4, 5, 6>

// The row parts of the first conv read the graph input (each slices its rows) and
// send 48 rows; the relu parts send the strided conv's parts exactly the rows each
// needs (tags `w<first>_<end>`: a band of a piece); parts send 16 of the 48 rows
// of the result to the core that assembles the graph output.
// ASM:      .core 0
// ASM:      .input x S:{{.*}}<1x4x96x96xf32>
// ASM:      SEND @2:v0r0p0 <- S:{{.*}}<1x8x48x96xf32>
// ASM:      .core 1
// ASM:      SEND @3:v0r0p1 <- S:{{.*}}<1x8x48x96xf32>
// ASM:      .core 2
// ASM:      RECV {{.*}}<1x8x48x96xf32> <- @0:v0r0p0
// ASM:      SEND @4:v1r0p0w0_32 <- S:{{.*}}<1x8x32x96xf32>
// ASM:      SEND @5:v1r0p0w31_48 <- S:{{.*}}<1x8x17x96xf32>
// ASM:      .core 3
// ASM:      SEND @5:v1r0p1w48_64 <- S:{{.*}}<1x8x16x96xf32>
// ASM:      SEND @6:v1r0p1w63_96 <- S:{{.*}}<1x8x33x96xf32>
// ASM:      .core 4
// ASM:      RECV {{.*}}<1x8x32x96xf32> <- @2:v1r0p0w0_32
// ASM:      SEND @7:v2r0p0 <- S:{{.*}}<1x8x16x48xf32>
// ASM:      .core 5
// ASM:      RECV {{.*}}<1x8x17x96xf32> <- @2:v1r0p0w31_48
// ASM:      RECV {{.*}}<1x8x16x96xf32> <- @3:v1r0p1w48_64
// ASM:      .core 6
// ASM:      RECV {{.*}}<1x8x33x96xf32> <- @3:v1r0p1w63_96
// ASM:      .core 7
// ASM:      .output y S:{{.*}}<1x8x48x48xf32>

func.func @main(%x: tensor<1x4x96x96xf32> {nnx.name = "x"}) -> (tensor<1x8x48x48xf32> {nnx.name = "y"}) {
  %w1 = graph.constant dense<0.01> : tensor<8x4x3x3xf32>
  %w2 = graph.constant dense<0.02> : tensor<8x8x3x3xf32>
  %h = graph.conv(%x, %w1) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x96x96xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x96x96xf32>
  %r = graph.relu(%h) : (tensor<1x8x96x96xf32>) -> tensor<1x8x96x96xf32>
  %y = graph.conv(%r, %w2) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x96x96xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x48x48xf32>
  func.return %y : tensor<1x8x48x48xf32>
}
