// RUN: nnx-opt %s -p chip-lower | FileCheck %s

// chip-lower emits the instructions in op order, unscheduled and without SIGNAL/WAIT.
// Storage has no addresses yet: every storage tensor is a chip.buffer, declared in
// allocation order (the input @t0, the constant @t1, then the results: the two
// matmul/softmax results @t2, @t3 stay resident and are never stored, the graph
// output @t4 is), and storage tiles point into their buffer (@tK:OFFSET;
// chip-allocate gives the addresses). Every instruction carries its exact reads and
// writes (`nnx.access`: whole storage buffers S:@tK, cache bytes, element boxes of
// resident buffers) and its sequential position (`nnx.seq`).
// CHECK:      chip.program {storage_bytes = 0 : i64, target = "nnx-default"}
// CHECK-NEXT:   chip.buffer @t0 {bytes = 128 : i64, kind = "input"}
// CHECK-NEXT:   chip.buffer @t1 {bytes = 256 : i64, kind = "const"}
// CHECK-NEXT:   chip.buffer @t2 {bytes = 128 : i64, kind = "intermediate"}
// CHECK-NEXT:   chip.buffer @t3 {bytes = 128 : i64, kind = "intermediate"}
// CHECK-NEXT:   chip.buffer @t4 {bytes = 128 : i64, kind = "output"}
// CHECK-NEXT:   chip.input @x #chip.tile<@t0:0x0, 4x8xf32>
// CHECK-NEXT:   chip.const @w #chip.tile<@t1:0x0, 8x8xf32>
// CHECK-NEXT:   chip.output @y #chip.tile<@t4:0x0, 4x8xf32>
// CHECK-NEXT:   chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<@t0:0x0, 4x8xf32> {nnx.access = "S:@t0 | N:0:128", nnx.seq = 0 : i64}
// CHECK-NEXT:   chip.load DAU0 #chip.tile<W:0x0, 8x8xf32> <- #chip.tile<@t1:0x0, 8x8xf32> {nnx.access = "S:@t1 | W:0:256", nnx.seq = 1 : i64}
// The matmul's result is resident in the output cache: its write is an element box.
// CHECK-NEXT:   chip.mpu MatMul MPU0 #chip.tile<O:0xfff80, 4x8xf32> <- {{.*}} {nnx.access = "N:0:128 W:0:256 | O:1048448:1048576:1048448:4x8:0-4,0-8", nnx.seq = 2 : i64}
// CHECK-NEXT:   chip.vpu Softmax VPU0
// CHECK-NOT:    chip.signal
// CHECK-NOT:    chip.wait
// CHECK:        chip.store DAU0 #chip.tile<@t4:0x0, 4x8xf32> <- #chip.tile<O:0x7ff80, 4x8xf32> {nnx.access = "O:524160:524288 | S:@t4", nnx.seq = 6 : i64}
// CHECK-NEXT: }
func.func @main(%x: tensor<4x8xf32> {nnx.name = "x"}) -> (tensor<4x8xf32> {nnx.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<8x8xf32>
  %a = graph.matmul(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = graph.softmax(%a) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = graph.matmul(%s, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}



// A bad target file is one error naming chip-lower.
// RUN: not nnx-opt %s -p 'chip-lower{target="%S/nonexistent.toml"}' 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: chip-lower: {{.*}}nonexistent.toml
