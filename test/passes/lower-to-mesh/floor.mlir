// lower-to-mesh: small ops are not spread thin (docs/mesh.md, "Compilation"). A
// 1 x 256 x 512 matmul (131072 MACs, below the floor of 1 M MACs a core's part must
// have) with a 512 KiB constant weight on a 4 x 4 mesh of 512 KiB cores is split over
// just the 2 cores its weights need, 256 columns each; the relu follows on the same
// cores; the second part's core also concatenates the graph output (it has room, so
// no third core is taken).
//
// Messages are placed per message: the concatenating core computes its own piece
// first and receives piece 0 only just before the LOAD that first reads it (the
// RECV is not at the start); core 0 sends its piece right after the last
// instruction that writes it.

// RUN: nnx-opt %s -p 'lower-to-mesh{target="%S/Inputs/mesh4x4.toml" schedule=stages placement=rowmajor asm="%t.s"}' | FileCheck %s
// RUN: FileCheck %s --check-prefix=ASM --input-file %t.s

// CHECK:      graph.matmul
// CHECK-SAME: nnx.mesh.cores = array<i64: 0, 1>
// CHECK:      graph.relu
// CHECK-SAME: nnx.mesh.cores = array<i64: 0, 1>

// ASM:      .core 0
// ASM-NOT:  SEND
// ASM:      DAU1 STORE S:{{.*}}<1x128xf32>
// ASM-NEXT: DAU1 SIGNAL mesh_tx_v1r0p0_DAU1
// ASM-NEXT: DAU0 WAIT mesh_tx_v1r0p0_DAU1
// ASM-NEXT: DAU0 SEND @1:v1r0p0 <- S:{{.*}}<1x256xf32>
// ASM-NEXT: .core 1
// ASM-NOT:  .core
// ASM:      .output y S:{{.*}}<1x512xf32>
// ASM-NOT:  RECV
// ASM:      MPU0 MatMul
// ASM:      VPU0 Relu
// ASM:      DAU0 RECV S:[[A0:0x[0-9a-f]+]]<1x256xf32> <- @0:v1r0p0
// ASM-NEXT: DAU0 LOAD N:{{.*}} <- S:[[A0]]<1x256xf32>
// ASM-NOT:  .core 2

func.func @main(%x: tensor<1x256xf32> {nnx.name = "x"}) -> (tensor<1x512xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<256x512xf32>
  %m = graph.matmul(%x, %w) : (tensor<1x256xf32>, tensor<256x512xf32>) -> tensor<1x512xf32>
  %r = graph.relu(%m) : (tensor<1x512xf32>) -> tensor<1x512xf32>
  func.return %r : tensor<1x512xf32>
}
