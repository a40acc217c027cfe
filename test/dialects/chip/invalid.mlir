// Invalid chip IR: one clear diagnostic per case, at the op.
// RUN: nnx-opt %s --split-input-file --verify-diagnostics

chip.program {storage_bytes = 64 : i64} {
  // expected-error@+1 {{LOAD runs on a DAU unit, not on MPU0}}
  chip.load MPU0 #chip.tile<N:0x0, 4xf32> <- #chip.tile<S:0x0, 4xf32>
}

// -----

chip.program {storage_bytes = 64 : i64} {
  // expected-error@+1 {{LOAD moves storage (S) -> cache (N, W, O)}}
  chip.load DAU0 #chip.tile<N:0x0, 4xf32> <- #chip.tile<W:0x0, 4xf32>
}

// -----

chip.program {storage_bytes = 64 : i64} {
  // expected-error@+1 {{shapes differ (4 <- 2x2)}}
  chip.load DAU0 #chip.tile<N:0x0, 4xf32> <- #chip.tile<S:0x0, 2x2xf32>
}

// -----

chip.program {storage_bytes = 64 : i64} {
  // expected-error@+1 {{address 0x2 is not aligned to the 4-byte element type f32}}
  chip.vpu Relu VPU0 #chip.tile<O:0x2, 4xf32> <- #chip.tile<O:0x0, 4xf32>
}

// -----

chip.program {storage_bytes = 64 : i64} {
  // expected-error@+1 {{Relu: source #0 must be in a cache (N, W, O), not in S}}
  chip.vpu Relu VPU0 #chip.tile<O:0x0, 4xf32> <- #chip.tile<S:0x0, 4xf32>
}

// -----

chip.program {storage_bytes = 64 : i64} {
  // expected-error@+1 {{MatMul: 'wmask' must be a direct-index (ui8 or i1) tile in a cache}}
  chip.mpu MatMul MPU0 #chip.tile<O:0x0, 2x2xf32> <- #chip.tile<N:0x0, 2x2xf32>, #chip.tile<W:0x0, 2x2xf32> {wmask = #chip.tile<W:0x40, 2x2xf32>}
}

// -----

chip.program {storage_bytes = 64 : i64} {
  // expected-error@+1 {{CONN needs a non-negative numeric parameter 'threshold'}}
  chip.conn MAP0 #chip.tile<N:0x40, 4xui8> <- #chip.tile<N:0x0, 4xf32>
}

// -----

chip.program {storage_bytes = 64 : i64} {
  // expected-error@+1 {{COMBINE: the two connection data have strings of different lengths or shapes}}
  chip.combine MAP0 #chip.tile<N:0x40, 4xui8> <- #chip.tile<N:0x0, 4xui8>, #chip.tile<N:0x10, 5xui8>
}

// -----

chip.program {storage_bytes = 16 : i64} {
  // expected-error@+1 {{@y ends at byte 32, beyond storage_bytes 16}}
  chip.output @y #chip.tile<S:0x0, 8xf32>
}

// -----

chip.program {storage_bytes = 64 : i64} {
  // expected-error@+1 {{@w: value tensor<3xf32> does not fill the tile S:0x0<4xf32>}}
  chip.const @w #chip.tile<S:0x0, 4xf32> = dense<1.0> : tensor<3xf32>
}

// -----

chip.program {storage_bytes = 64 : i64} {
  // expected-error@+1 {{@x: must live in storage (S or a @buffer), not N}}
  chip.input @x #chip.tile<N:0x0, 4xf32>
}

// -----

func.func @f() {
  // expected-error@+1 {{'chip.wait' expects parent op 'chip.program'}}
  chip.wait MPU0 t0
  func.return
}

// -----

chip.program {storage_bytes = 16 : i64} {
  // expected-error@+1 {{tile S:0x0<8xf32> ends at byte 32, beyond storage_bytes 16}}
  chip.load DAU0 #chip.tile<N:0x0, 8xf32> <- #chip.tile<S:0x0, 8xf32>
}

// -----

chip.program {storage_bytes = 16 : i64} {
  // expected-error@+1 {{unsupported tile element type bf16}}
  chip.load DAU0 #chip.tile<N:0x0, 8xbf16> <- #chip.tile<S:0x0, 8xf32>
}

// -----

// A symbolic storage tile must point into a declared chip.buffer (checked by the
// program, which knows its buffers; the message names the instruction).
// expected-error@+1 {{chip.load: tile @t1:0x0<4x8xf32> points into @t1, which is not a chip.buffer}}
chip.program {storage_bytes = 0 : i64} {
  chip.buffer @t0 {bytes = 128 : i64, kind = "input"}
  chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<@t1:0x0, 4x8xf32>
}

// -----

// ... and stay inside it: 4x8xf32 at offset 64 ends at byte 192 of a 128-byte buffer.
// expected-error@+1 {{chip.load: tile @t0:0x40<4x8xf32> ends at byte 192 of @t0, a 128-byte buffer}}
chip.program {storage_bytes = 0 : i64} {
  chip.buffer @t0 {bytes = 128 : i64, kind = "input"}
  chip.load DAU0 #chip.tile<N:0x0, 4x8xf32> <- #chip.tile<@t0:0x40, 4x8xf32>
}

// -----

// A buffer's kind says where chip-allocate puts it: only four kinds exist.
chip.program {storage_bytes = 0 : i64} {
  // expected-error@+1 {{@t0: kind must be one of const, input, intermediate, output, not 'weights'}}
  chip.buffer @t0 {bytes = 128 : i64, kind = "weights"}
}

// -----

chip.program {storage_bytes = 0 : i64} {
  // expected-error@+1 {{@t0: bytes must be at least 1}}
  chip.buffer @t0 {bytes = 0 : i64, kind = "intermediate"}
}
