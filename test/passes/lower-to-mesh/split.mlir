// lower-to-mesh: a 64 x 256 x 512 matmul (8.4 M MACs, above the floor of 1 M MACs per
// core, docs/mesh.md "Compilation") with a 512 KiB constant weight on a 4 x 4 mesh of 512 KiB
// cores is split by output features over 7 cores (more than the 2 its weights
// need: its share of the mesh's compute), columns 73 or 74 wide, the relu follows the split on the same
// cores, and the graph output is concatenated on one more core. The mesh program
// sends every piece from its core to the concatenating core, where a RECV of the
// same tag receives it.

// RUN: nnx-opt %s -p 'lower-to-mesh{target="%S/Inputs/mesh4x4.toml" schedule=stages placement=rowmajor asm="%t.s"}' | FileCheck %s
// RUN: FileCheck %s --check-prefix=ASM --input-file %t.s
// RUN: nnx-opt %s -p 'lower-to-mesh{target="%S/Inputs/mesh4x4.toml" schedule=stages placement=bisect asm="%t.b.s"}' | FileCheck %s --check-prefix=BISECT

// CHECK:      graph.matmul
// CHECK-SAME: nnx.mesh.cores = array<i64: 0, 1, 2, 3, 4, 5, 6>
// CHECK:      graph.relu
// CHECK-SAME: nnx.mesh.cores = array<i64: 0, 1, 2, 3, 4, 5, 6>

// ASM:      .mesh 4x4
// ASM:      .core 0
// ASM:      .data {{.*}}.data S:0x0 74752
// ASM:      DAU0 SEND    @7:v1r0p0 <- S:{{.*}}<64x73xf32>
// ASM:      .core 3
// ASM:      DAU0 SEND    @7:v1r0p3 <- S:{{.*}}<64x74xf32>
// ASM:      .core 7
// ASM:      .output y S:{{.*}}<64x512xf32>
// ASM-DAG:  DAU0 RECV    S:{{.*}}<64x73xf32> <- @0:v1r0p0
// ASM-DAG:  DAU0 RECV    S:{{.*}}<64x74xf32> <- @3:v1r0p3
// ASM-DAG:  DAU0 RECV    S:{{.*}}<64x73xf32> <- @6:v1r0p6

// bisection places the same 8 stages on other cores (a compact region of the mesh)
// BISECT:      graph.matmul
// BISECT-SAME: nnx.mesh.cores = array<i64:
// BISECT-NOT:  0, 1, 2, 3, 4, 5, 6>

func.func @main(%x: tensor<64x256xf32> {nnx.name = "x"}) -> (tensor<64x512xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<256x512xf32>
  %m = graph.matmul(%x, %w) : (tensor<64x256xf32>, tensor<256x512xf32>) -> tensor<64x512xf32>
  %r = graph.relu(%m) : (tensor<64x512xf32>) -> tensor<64x512xf32>
  func.return %r : tensor<64x512xf32>
}
