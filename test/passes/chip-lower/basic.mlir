// RUN: nnx-opt %s -p chip-lower | FileCheck %s

// chip-lower emits the instructions in op order, unscheduled and without SIGNAL/WAIT.
// Storage is in two virtual regions: the constant @w from address 0, the input and
// the output from 0x100000000000 (chip-allocate relocates them); the program says so
// with `nnx.unallocated`. Every instruction carries its exact reads and writes
// (`nnx.access`: storage allocations S:LO:HI, cache bytes, element boxes of resident
// buffers) and its sequential position (`nnx.seq`).
// CHECK:      chip.program {storage_bytes = 0 : i64, target = "nnx-default", nnx.unallocated = {const_bytes = 256 : i64, data_bytes = 512 : i64}}
// CHECK-NEXT:   chip.input @x #chip.tile<S:0x100000000000, 4x8xf32>
// CHECK-NEXT:   chip.const @w #chip.tile<S:0x0, 8x8xf32>
// CHECK-NEXT:   chip.output @y #chip.tile<S:0x100000000180, 4x8xf32>
// CHECK-NEXT:   chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<S:0x100000000000, 4x8xf32> {nnx.access = "S:17592186044416:17592186044544 | N:0:128", nnx.seq = 0 : i64}
// CHECK-NEXT:   chip.load DAU0 #chip.tile<W:0x0, 8x8xf32> <- #chip.tile<S:0x0, 8x8xf32> {nnx.access = "S:0:256 | W:0:256", nnx.seq = 1 : i64}
// The matmul's result is resident in the output cache: its write is an element box.
// CHECK-NEXT:   chip.mpu MatMul MPU0 #chip.tile<O:0xfff80, 4x8xf32> <- {{.*}} {nnx.access = "N:0:128 W:0:256 | O:1048448:1048576:1048448:4x8:0-4,0-8", nnx.seq = 2 : i64}
// CHECK-NEXT:   chip.vpu Softmax VPU0
// CHECK-NOT:    chip.signal
// CHECK-NOT:    chip.wait
// CHECK:        chip.store DAU0 #chip.tile<S:0x100000000180, 4x8xf32> <- #chip.tile<O:0x7ff80, 4x8xf32> {nnx.access = "O:524160:524288 | S:17592186044800:17592186044928", nnx.seq = 6 : i64}
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
