// lower-to-mesh: a channel shuffle split by rows (docs/mesh.md, "Compilation", "Row splits").
// A 3 x 3 conv on a 96 x 96 image, then ShuffleNet's channel shuffle (reshape
// 1x8x96x96 -> 1x2x4x96x96, transpose perm 0,2,1,3,4, reshape back) and a strided
// 3 x 3 conv, on a 4 x 4 mesh of 512 KiB cores. The first conv is split by rows (3
// parts of 32 rows). The reshapes and the transpose keep the rows as an axis of
// their own (axis 3 of the rank-5 values), so they pass the row split through:
// part j of each views or transposes band j of rows (its input piece j, whole) and
// nothing is gathered whole. The strided conv reads its bands, with one halo row
// from the piece before, from the pieces of the shuffled rows.

// RUN: nnx-opt %s -p 'lower-to-mesh{target="%S/Inputs/mesh4x4.toml" schedule=stages placement=rowmajor asm="%t.s"}' | FileCheck %s
// RUN: FileCheck %s --check-prefix=ASM --input-file %t.s
// RUN: FileCheck %s --check-prefix=WHOLE --input-file %t.s

// CHECK:      graph.conv
// CHECK-SAME: nnx.mesh.cores = array<i64: 0, 1, 2>
// CHECK:      graph.reshape
// CHECK-SAME: nnx.mesh.cores = array<i64: 3, 4, 5>
// CHECK:      graph.transpose
// CHECK-SAME: nnx.mesh.cores = array<i64: 6, 7, 8>
// CHECK:      graph.reshape
// CHECK-SAME: nnx.mesh.cores = array<i64: 9, 10, 11>
// CHECK:      graph.conv
// CHECK-SAME: nnx.mesh.cores = array<i64: 12, 13, 14>

// The bands travel as rank-5 pieces of 32 rows (1x2x4x32x96, then transposed
// 1x4x2x32x96), and back to rank 4 (1x8x32x96); the strided conv's parts get the
// last row of the piece before (tag `w<first>_<end>`). No message and no value of a
// core holds all 96 rows of the shuffle.
// ASM:      .core 3
// ASM:      RECV {{.*}}<1x8x32x96xf32> <- @0:v0r0p0
// ASM:      SEND @6:v1r0p0 <- S:{{.*}}<1x2x4x32x96xf32>
// ASM:      .core 6
// ASM:      RECV {{.*}}<1x2x4x32x96xf32> <- @3:v1r0p0
// ASM:      SEND @9:v2r0p0 <- S:{{.*}}<1x4x2x32x96xf32>
// ASM:      .core 8
// ASM:      RECV {{.*}}<1x2x4x32x96xf32> <- @5:v1r0p2
// ASM:      SEND @11:v2r0p2 <- S:{{.*}}<1x4x2x32x96xf32>
// ASM:      .core 9
// ASM:      RECV {{.*}}<1x4x2x32x96xf32> <- @6:v2r0p0
// ASM:      SEND @13:v3r0p0w31_32 <- S:{{.*}}<1x8x1x96xf32>
// ASM:      SEND @12:v3r0p0 <- S:{{.*}}<1x8x32x96xf32>
// ASM:      .core 12
// ASM:      .output y S:{{.*}}<1x8x48x48xf32>
// ASM:      RECV {{.*}}<1x8x32x96xf32> <- @9:v3r0p0
// ASM:      .core 14
// ASM:      RECV {{.*}}<1x8x1x96xf32> <- @10:v3r0p1w63_64
// ASM:      RECV {{.*}}<1x8x32x96xf32> <- @11:v3r0p2
// ASM-NOT:  .core 15

// Past the first conv's cores (which hold the graph input x whole), no tile of any
// core has 96 rows.
// WHOLE:      .core 3
// WHOLE-NOT:  x96x96xf32>

func.func @main(%x: tensor<1x4x96x96xf32> {nnx.name = "x"}) -> (tensor<1x8x48x48xf32> {nnx.name = "y"}) {
  %w1 = graph.constant dense<0.01> : tensor<8x4x3x3xf32>
  %w2 = graph.constant dense<0.02> : tensor<8x8x3x3xf32>
  %s5 = graph.constant dense<[1, 2, 4, 96, 96]> : tensor<5xi64>
  %s4 = graph.constant dense<[1, 8, 96, 96]> : tensor<4xi64>
  %h = graph.conv(%x, %w1) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x96x96xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x96x96xf32>
  %r = graph.reshape(%h, %s5) : (tensor<1x8x96x96xf32>, tensor<5xi64>) -> tensor<1x2x4x96x96xf32>
  %t = graph.transpose(%r) {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x4x96x96xf32>) -> tensor<1x4x2x96x96xf32>
  %b = graph.reshape(%t, %s4) : (tensor<1x4x2x96x96xf32>, tensor<4xi64>) -> tensor<1x8x96x96xf32>
  %y = graph.conv(%b, %w2) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x96x96xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x48x48xf32>
  func.return %y : tensor<1x8x48x48xf32>
}
