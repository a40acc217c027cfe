// lower-to-mesh: a split along the reduction axis (docs/mesh.md, "Compilation"). An
// MLP 64 -> 1024 -> 16 on 128 rows on a 4 x 4 mesh of 512 KiB cores: the
// up-projection is split by output features over 6 cores (its share of the compute),
// the relu follows it there. The down-projection's 128 x 1024 input (512 KiB) alone
// exceeds the 60 % of a core the partitioner plans to fill, so no split by output
// features fits; it is split along K instead, into 2 parts that each take 3 of the 6
// relu pieces (512 rows of the weight) and compute one partial product per piece
// (no concat of the pieces). The sum is chained: part 1 adds part 0's running sum to
// its own and holds the graph output (no extra core gathers the parts).

// RUN: nnx-opt %s -p 'lower-to-mesh{target="%S/Inputs/mesh4x4.toml" schedule=stages placement=rowmajor asm="%t.s"}' | FileCheck %s
// RUN: FileCheck %s --check-prefix=ASM --input-file %t.s

// CHECK:      graph.matmul
// CHECK-SAME: nnx.mesh.cores = array<i64: 0, 1, 2, 3, 4, 5>
// CHECK:      graph.relu
// CHECK-SAME: nnx.mesh.cores = array<i64: 0, 1, 2, 3, 4, 5>
// CHECK:      graph.matmul
// CHECK-SAME: nnx.mesh.cores = array<i64: 6, 7>

// Part 0 (core 6) receives the relu pieces 0-2 only and sends its 128 x 16 partial
// sum to part 1 (core 7), which receives the pieces 3-5 and that sum, and sends
// nothing: it holds the output. There is no core 8.
// ASM:      .core 6
// ASM-NOT:  .core
// ASM:      RECV {{.*}} <- @0:v1r0p0
// ASM:      RECV {{.*}} <- @1:v1r0p1
// ASM:      RECV {{.*}} <- @2:v1r0p2
// ASM:      SEND @7:v2r0p0 <- S:{{.*}}<128x16xf32>
// ASM:      .core 7
// ASM-NOT:  .core
// ASM:      RECV {{.*}} <- @3:v1r0p3
// ASM:      RECV {{.*}} <- @4:v1r0p4
// ASM:      RECV {{.*}} <- @5:v1r0p5
// ASM:      RECV {{.*}}<128x16xf32> <- @6:v2r0p0
// ASM-NOT:  SEND
// ASM-NOT:  .core 8

func.func @main(%x: tensor<128x64xf32> {nnx.name = "x"}) -> (tensor<128x16xf32> {nnx.name = "y"}) {
  %w1 = graph.constant dense<0.01> : tensor<64x1024xf32>
  %w2 = graph.constant dense<0.02> : tensor<1024x16xf32>
  %h = graph.matmul(%x, %w1) : (tensor<128x64xf32>, tensor<64x1024xf32>) -> tensor<128x1024xf32>
  %r = graph.relu(%h) : (tensor<128x1024xf32>) -> tensor<128x1024xf32>
  %y = graph.matmul(%r, %w2) : (tensor<128x1024xf32>, tensor<1024x16xf32>) -> tensor<128x16xf32>
  func.return %y : tensor<128x16xf32>
}
