// chip IR -> assembly + data file, then the simulator runs it.
// RUN: rm -rf %t && mkdir -p %t
// RUN: nnx-translate --to-asm %s -o %t/prog.s
// RUN: FileCheck %s < %t/prog.s
// RUN: %python -c "import numpy as np; np.save('%t/x.npy', np.array([[1,-2],[3,-4]],'f4'))"
// RUN: nnx-run %t/prog.s --input x=%t/x.npy --output-dir %t/out
// RUN: %python -c "import numpy as np; print(np.load('%t/out/y.npy').tolist())" | FileCheck %s --check-prefix=OUT
// RUN: not nnx-translate --to-asm %s -o %t/big.s --target %S/Inputs/small.toml 2>&1 | FileCheck %s --check-prefix=TARGET
// CHECK:      .storage 48
// CHECK-NEXT: .data prog.data S:0x10 16 crc32=0x{{[0-9a-f]+}}
// CHECK-NEXT: .input x S:0x0<2x2xf32>
// CHECK-NEXT: .output y S:0x20<2x2xf32>
// CHECK-NEXT: .const w S:0x10<2x2xf32>
// CHECK-NEXT: .text
// CHECK-NEXT: DAU0 LOAD    N:0x0<2x2xf32> <- S:0x0<2x2xf32>
// CHECK:      MPU0 MatMul  O:0x0<2x2xf32> <- N:0x0<2x2xf32>, W:0x0<2x2xf32>
// CHECK:      VPU0 Relu    O:0x0<2x2xf32> <- O:0x0<2x2xf32>
// OUT: 7.0, 10.0], [15.0, 22.0]]
// TARGET: error: does not fit target 'small': chip.load: tile N:0x0<2x2xf32> ends at byte 16, beyond the neuron cache
builtin.module {
  chip.program {storage_bytes = 48 : i64} {
    chip.input @x #chip.tile<S:0x0, 2x2xf32>
    chip.const @w #chip.tile<S:0x10, 2x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    chip.output @y #chip.tile<S:0x20, 2x2xf32>
    chip.load DAU0 #chip.tile<N:0x0, 2x2xf32> <- #chip.tile<S:0x0, 2x2xf32>
    chip.load DAU0 #chip.tile<W:0x0, 2x2xf32> <- #chip.tile<S:0x10, 2x2xf32>
    chip.signal DAU0 ld
    chip.wait VPU0 ld
    chip.vpu Abs VPU0 #chip.tile<N:0x0, 2x2xf32> <- #chip.tile<N:0x0, 2x2xf32>
    chip.signal VPU0 abs
    chip.wait MPU0 abs
    chip.mpu MatMul MPU0 #chip.tile<O:0x0, 2x2xf32> <- #chip.tile<N:0x0, 2x2xf32>, #chip.tile<W:0x0, 2x2xf32>
    chip.signal MPU0 mm
    chip.wait VPU0 mm
    chip.vpu Relu VPU0 #chip.tile<O:0x0, 2x2xf32> <- #chip.tile<O:0x0, 2x2xf32>
    chip.signal VPU0 r
    chip.wait DAU0 r
    chip.store DAU0 #chip.tile<S:0x20, 2x2xf32> <- #chip.tile<O:0x0, 2x2xf32>
  }
}
