"""The reference simulator: functional results against numpy, timing sanity, report,
trace, mapping unit, and every bad-input case (one line, exit 1, no output files)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from nnx import connection_data as cd
from nnx.interp.kernels import run_kernel
from nnx.sim.asm import parse_program
from nnx.sim.cli import run
from nnx.sim.simulator import Simulator
from nnx.target import load_target

RNG = np.random.default_rng(0)


def tiled_matmul_relu(m=8, k=64, n=32, tm=4, tk=32) -> str:
    """y = relu(x @ w), row tiles of tm, reduction tiles of tk (acc), double-buffered
    neuron tiles, DMA/MPU/VPU synchronised by tokens."""
    xb, wb, yb = 0, m * k * 4, m * k * 4 + k * n * 4
    lines = [
        f".storage {yb + m * n * 4}",
        f".input x S:0x{xb:x}<{m}x{k}xf32>",
        f".input w S:0x{wb:x}<{k}x{n}xf32>",
        f".output y S:0x{yb:x}<{m}x{n}xf32>",
        ".text",
        f"DAU0 LOAD W:0x0<{k}x{n}xf32> <- S:0x{wb:x}<{k}x{n}xf32>",
        "DAU0 SIGNAL w",
        "MPU0 WAIT w",
    ]
    tiles = m // tm
    for i in range(tiles):
        buf = (i % 2) * tm * k * 4
        if i >= 2:
            lines.append(f"DAU0 WAIT free{i % 2}")
        lines += [
            f"DAU0 LOAD N:0x{buf:x}<{tm}x{k}xf32> <- S:0x{xb + i * tm * k * 4:x}<{tm}x{k}xf32>",
            f"DAU0 SIGNAL ld{i}",
        ]
    for i in range(tiles):
        buf = (i % 2) * tm * k * 4
        out = i * tm * n * 4
        lines.append(f"MPU0 WAIT ld{i}")
        lines.append(f"VPU0 FILL O:0x{out:x}<{tm}x{n}xf32> <- {{value=0.0}}")
        lines.append(f"VPU0 SIGNAL z{i}")
        lines.append(f"MPU0 WAIT z{i}")
        for kk in range(0, k, tk):
            lines.append(
                f"MPU0 MatMul O:0x{out:x}<{tm}x{n}xf32> <- N:0x{buf + kk * 4:x}<{tm}x{tk}xf32>[{k},1], "
                f"W:0x{kk * n * 4:x}<{tk}x{n}xf32>, acc"
            )
        lines += [f"MPU0 SIGNAL free{i % 2}", f"MPU0 SIGNAL mm{i}"]
        lines += [f"VPU0 WAIT mm{i}", f"VPU0 Relu O:0x{out:x}<{tm}x{n}xf32> <- O:0x{out:x}<{tm}x{n}xf32>",
                  f"VPU0 SIGNAL r{i}"]
        lines += [f"DAU0 WAIT r{i}",
                  f"DAU0 STORE S:0x{yb + out:x}<{tm}x{n}xf32> <- O:0x{out:x}<{tm}x{n}xf32>"]
    # DAU's program order: weight, loads (with buffer waits), then stores
    dau = [l for l in lines[5:] if l.startswith("DAU0")]
    rest = [l for l in lines[5:] if not l.startswith("DAU0")]
    return "\n".join(lines[:5] + dau[:-2 * tiles] + rest + dau[-2 * tiles:]) + "\n"


def _run(tmp_path, text, inputs, *extra, name="p.s"):
    prog = tmp_path / name
    prog.write_text(text)
    args = [str(prog), "--output-dir", str(tmp_path / "out"), "--report", str(tmp_path / "r.json")]
    for k, v in inputs.items():
        f = tmp_path / f"{k}.npy"
        np.save(f, v)
        args += ["--input", f"{k}={f}"]
    rc = run(args + list(extra))
    return rc


def test_tiled_matmul_relu_matches_numpy_and_times_sanely(tmp_path):
    x = RNG.standard_normal((8, 64)).astype(np.float32)
    w = RNG.standard_normal((64, 32)).astype(np.float32)
    rc = _run(tmp_path, tiled_matmul_relu(), {"x": x, "w": w}, "--trace", str(tmp_path / "t.json"))
    assert rc == 0
    y = np.load(tmp_path / "out" / "y.npy")
    np.testing.assert_allclose(y, np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)
    r = json.loads((tmp_path / "r.json").read_text())
    for key in ("cycles", "units", "bytes_moved", "peak_cache_bytes", "macs", "macs_skipped", "memory_over_time"):
        assert key in r
    t = load_target()
    assert r["macs"] == 8 * 64 * 32 and r["macs_skipped"] == 0
    # 8 x 64 x 32 MACs over the run's cycles on the default core's 1,024 MACs/cycle
    assert r["mac_utilization"] == round(8 * 64 * 32 / (r["cycles"] * 1024), 6)
    assert r["bytes_moved"] == (8 * 64 + 64 * 32 + 8 * 32) * 4
    # DMA time = latency + bytes / bandwidth, per transfer
    dma = t.dma_cycles(64 * 32 * 4) + 2 * t.dma_cycles(4 * 64 * 4) + 2 * t.dma_cycles(4 * 32 * 4)
    assert r["units"]["DAU0"]["busy_cycles"] == dma
    assert r["units"]["MPU0"]["busy_cycles"] == 4 * t.mpu_cycles(4 * 32 * 32)
    busy = sum(u["busy_cycles"] for k, u in r["units"].items() if k != "ICU")
    assert r["cycles"] < busy  # the units overlap
    assert r["cycles"] >= max(u["busy_cycles"] for u in r["units"].values())
    assert r["peak_cache_bytes"]["weight"] == 64 * 32 * 4
    assert r["peak_cache_bytes"]["total"] <= sum(
        v for k, v in r["peak_cache_bytes"].items() if k != "total"
    )
    assert 0 < r["units"]["DAU0"]["utilisation"] <= 1
    # trace: valid JSON, one track per unit, complete events, overlap between units
    tr = json.loads((tmp_path / "t.json").read_text())
    names = {e["args"]["name"] for e in tr["traceEvents"] if e.get("name") == "thread_name"}
    assert names == {"ICU", "DAU0", "MPU0", "VPU0", "MAP0"}
    xs = [e for e in tr["traceEvents"] if e["ph"] == "X"]
    assert all({"ts", "dur", "pid", "tid", "name"} <= set(e) for e in xs)
    by_tid: dict[int, list] = {}
    for e in xs:
        by_tid.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    tids = [t_ for t_ in by_tid if len(by_tid) > 1]
    overlap = any(
        a0 < b1 and b0 < a1
        for i in tids for j in tids if i < j
        for a0, a1 in by_tid[i] for b0, b1 in by_tid[j]
    )
    assert overlap


def test_module_entry_point_runs(tmp_path):
    x = np.ones((8, 64), np.float32)
    w = np.ones((64, 32), np.float32)
    prog = tmp_path / "p.s"
    prog.write_text(tiled_matmul_relu())
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    out = subprocess.run(
        [sys.executable, "-m", "nnx.sim.cli", str(prog), "--input", f"x={tmp_path / 'x.npy'}",
         "--input", f"w={tmp_path / 'w.npy'}", "--output-dir", str(tmp_path / "o")],
        capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stderr
    assert np.all(np.load(tmp_path / "o" / "y.npy") == 64.0)


def test_padded_conv_and_pool_use_the_kernels(tmp_path):
    # conv 3x3 pad 1 on a 1x2x6x6 input: FILL a padded buffer, LOAD the interior
    # through a strided cache tile, Conv on the MPU, MaxPool on the VPU.
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
    w = RNG.standard_normal((4, 2, 3, 3)).astype(np.float32)
    b = RNG.standard_normal((4,)).astype(np.float32)
    text = f"""
.storage 4096
.input x S:0x0<1x2x6x6xf32>
.input w S:0x200<4x2x3x3xf32>
.input b S:0x600<4xf32>
.output y S:0x700<1x4x3x3xf32>
.text
VPU0 FILL N:0x0<1x2x8x8xf32> <- {{value=0.0}}
VPU0 SIGNAL pad
DAU0 LOAD W:0x0<4x2x3x3xf32> <- S:0x200<4x2x3x3xf32>
DAU0 LOAD W:0x400<4xf32> <- S:0x600<4xf32>
DAU0 WAIT pad
DAU0 LOAD N:0x24<1x2x6x6xf32>[128,64,8,1] <- S:0x0<1x2x6x6xf32>
DAU0 SIGNAL in
MPU0 WAIT in
MPU0 Conv O:0x0<1x4x6x6xf32> <- N:0x0<1x2x8x8xf32>, W:0x0<4x2x3x3xf32>, W:0x400<4xf32>, {{kernel_shape=[3,3]}}
MPU0 SIGNAL c
VPU0 WAIT c
VPU0 MaxPool O:0x400<1x4x3x3xf32> <- O:0x0<1x4x6x6xf32>, {{kernel_shape=[2,2], strides=[2,2]}}
VPU0 SIGNAL p
DAU0 WAIT p
DAU0 STORE S:0x700<1x4x3x3xf32> <- O:0x400<1x4x3x3xf32>
"""
    assert _run(tmp_path, text, {"x": x, "w": w, "b": b}) == 0
    ref = run_kernel("Conv", [x, w, b], {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]})[0]
    ref = run_kernel("MaxPool", [ref], {"kernel_shape": [2, 2], "strides": [2, 2]})[0]
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), ref, rtol=1e-5, atol=1e-5)
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["macs"] == 4 * 36 * 18


SPARSE = """
.storage {storage}
.input x S:0x0<16x64xf32>
.input w S:0x1000<64x64xf32>
.output y S:0x5000<16x64xf32>
.text
DAU0 LOAD N:0x0<16x64xf32> <- S:0x0<16x64xf32>
DAU0 LOAD W:0x0<64x64xf32> <- S:0x1000<64x64xf32>
DAU0 SIGNAL ld
MAP0 WAIT ld
MAP0 CONN W:0x4000<64x64xui8> <- W:0x0<64x64xf32>, {{threshold=0.0}}
MAP0 CONN N:0x1000<16x64xui8> <- N:0x0<16x64xf32>, {{threshold=0.0}}
MAP0 SIGNAL conn
MPU0 WAIT conn
MPU0 MatMul O:0x0<16x64xf32> <- N:0x0<16x64xf32>, W:0x0<64x64xf32>{masks}
MPU0 SIGNAL mm
DAU0 WAIT mm
DAU0 STORE S:0x5000<16x64xf32> <- O:0x0<16x64xf32>
"""


def test_sparse_matmul_skips_macs_and_matches(tmp_path):
    x = np.maximum(RNG.standard_normal((16, 64)), 0).astype(np.float32)  # ReLU sparsity
    w = RNG.standard_normal((64, 64)).astype(np.float32)
    w[RNG.random(w.shape) < 0.9] = 0.0  # 90% weight sparsity
    results = {}
    for label, masks in (("dense", ""), ("w", ", wmask=W:0x4000<64x64xui8>"),
                         ("nw", ", nmask=N:0x1000<16x64xui8>, wmask=W:0x4000<64x64xui8>")):
        d = tmp_path / label
        d.mkdir()
        assert _run(d, SPARSE.format(storage=0x5000 + 16 * 64 * 4, masks=masks), {"x": x, "w": w}) == 0
        np.testing.assert_allclose(np.load(d / "out" / "y.npy"), x @ w, rtol=1e-5, atol=1e-5)
        results[label] = json.loads((d / "r.json").read_text())
    dense_macs = 16 * 64 * 64
    assert results["dense"]["macs"] == dense_macs and results["dense"]["macs_skipped"] == 0
    assert results["w"]["macs"] == 16 * int(np.count_nonzero(w))
    pairs = int(((x != 0).astype(np.int64) @ (w != 0).astype(np.int64)).sum())
    assert results["nw"]["macs"] == pairs
    assert results["nw"]["macs"] + results["nw"]["macs_skipped"] == dense_macs
    assert results["nw"]["units"]["MPU0"]["busy_cycles"] < results["dense"]["units"]["MPU0"]["busy_cycles"]


def test_mapping_unit_matches_connection_data():
    a = RNG.standard_normal((4, 32)).astype(np.float32) * (RNG.random((4, 32)) < 0.5)
    b = RNG.standard_normal((32,)).astype(np.float32) * (RNG.random(32) < 0.5)
    text = """
.storage 4096
.input a S:0x0<4x32xf32>
.input b S:0x200<32xf32>
.output sa S:0x280<4x32xi32>
.output db S:0x480<32xui8>
.output comb S:0x4a0<4x32xi32>
.output packed S:0x6a0<128xf32>
.text
DAU0 LOAD N:0x0<4x32xf32> <- S:0x0<4x32xf32>
DAU0 LOAD W:0x0<32xf32> <- S:0x200<32xf32>
DAU0 SIGNAL ld
MAP0 WAIT ld
MAP0 CONN N:0x200<4x32xi32> <- N:0x0<4x32xf32>, {threshold=0.0}
MAP0 CONN W:0x80<32xi32> <- W:0x0<32xf32>, {threshold=0.0}
MAP0 CONVERT W:0x100<32xui8> <- W:0x80<32xi32>
MAP0 COMBINE N:0x400<4x32xi32> <- N:0x200<4x32xi32>, W:0x80<32xi32>
MAP0 COMPACT O:0x0<128xf32> <- N:0x0<4x32xf32>, N:0x400<4x32xi32>
MAP0 SIGNAL m
DAU0 WAIT m
DAU0 STORE S:0x280<4x32xi32> <- N:0x200<4x32xi32>
DAU0 STORE S:0x480<32xui8> <- W:0x100<32xui8>
DAU0 STORE S:0x4a0<4x32xi32> <- N:0x400<4x32xi32>
DAU0 STORE S:0x6a0<128xf32> <- O:0x0<128xf32>
"""
    sim = Simulator(parse_program(text, "m.s"))
    res = sim.run({"a": a, "b": b}).outputs
    np.testing.assert_array_equal(res["sa"], cd.stride_index(a, 0.0))
    np.testing.assert_array_equal(res["db"], cd.direct_index(b, 0.0))
    both, _ = cd.combine(cd.stride_index(a, 0.0), "stride", cd.stride_index(b, 0.0), "stride")
    np.testing.assert_array_equal(res["comb"], both)
    keep = (a != 0) & (b != 0)
    k = int(keep.sum())
    np.testing.assert_array_equal(res["packed"][:k], a[keep])
    assert not res["packed"][k:].any()


def test_expand_restores_a_compressed_weight():
    w = RNG.standard_normal((8, 16)).astype(np.float32)
    w[RNG.random(w.shape) < 0.7] = 0
    vals = w[w != 0]
    text = f"""
.storage 4096
.input vals S:0x0<128xf32>
.input conn S:0x200<8x16xi32>
.output w S:0x400<8x16xf32>
.text
DAU0 LOAD W:0x0<128xf32> <- S:0x0<128xf32>
DAU0 LOAD W:0x200<8x16xi32> <- S:0x200<8x16xi32>
DAU0 SIGNAL ld
MAP0 WAIT ld
MAP0 EXPAND W:0x400<8x16xf32> <- W:0x0<128xf32>, W:0x200<8x16xi32>
MAP0 SIGNAL e
DAU0 WAIT e
DAU0 STORE S:0x400<8x16xf32> <- W:0x400<8x16xf32>
"""
    padded = np.zeros(128, np.float32)
    padded[: vals.size] = vals
    out = Simulator(parse_program(text, "e.s")).run({"vals": padded, "conn": cd.stride_index(w, 0.0)}).outputs
    np.testing.assert_array_equal(out["w"], w)


def gather_program(rows=50, d=8, n=6) -> str:
    """y = table[idx] by indirect DMA: idx LOADed into the neuron cache, GATHER of the
    named rows of the storage table into the output cache, STORE."""
    tb, ib, yb = 0, rows * d * 4, rows * d * 4 + 64
    return "\n".join([
        f".storage {yb + n * d * 4}",
        f".input table S:0x{tb:x}<{rows}x{d}xf32>",
        f".input idx S:0x{ib:x}<{n}xi64>",
        f".output y S:0x{yb:x}<{n}x{d}xf32>",
        ".text",
        f"DAU0 LOAD N:0x0<{n}xi64> <- S:0x{ib:x}<{n}xi64>",
        f"DAU0 GATHER O:0x0<{n}x{d}xf32> <- S:0x{tb:x}<{rows}x{d}xf32>, N:0x0<{n}xi64>",
        f"DAU0 STORE S:0x{yb:x}<{n}x{d}xf32> <- O:0x0<{n}x{d}xf32>",
        "",
    ])


def test_gather_moves_only_the_named_rows(tmp_path):
    table = RNG.standard_normal((50, 8)).astype(np.float32)
    idx = np.array([3, -1, 0, 49, 3, -50], np.int64)  # negative = from the end (ONNX)
    rc = _run(tmp_path, gather_program(), {"table": table, "idx": idx})
    assert rc == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"), table[idx])
    r = json.loads((tmp_path / "r.json").read_text())
    t = load_target()
    # the DMA moved the 6 rows, not the 50-row table
    assert r["dma"]["gather"] == 6 * 8 * 4
    assert r["bytes_moved"] == 6 * 8 + 6 * 8 * 4 * 2
    assert r["units"]["DAU0"]["busy_cycles"] == (
        t.dma_cycles(6 * 8) + t.gather_cycles(6, 8 * 4) + t.dma_cycles(6 * 8 * 4)
    )


def test_gather_index_out_of_range(tmp_path, capsys):
    table = np.zeros((50, 8), np.float32)
    rc = _run(tmp_path, gather_program(), {"table": table, "idx": np.array([0, 1, 2, 50, 0, 0], np.int64)})
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1, err
    assert "p.s:7: error: GATHER: index 50 out of range for 50 rows" in err
    assert not (tmp_path / "out" / "y.npy").exists()


@pytest.mark.parametrize(
    "line,expect",
    [
        ("DAU0 GATHER O:0x0<6x8xf32> <- N:0x0<50x8xf32>, N:0x0<6xi64>", "GATHER moves rows of a storage (S) tensor"),
        ("DAU0 GATHER O:0x0<6x8xf32> <- S:0x0<50x8xf32>, N:0x0<6xf32>", "GATHER: indices must be i32 or i64"),
        ("DAU0 GATHER O:0x0<6x4xf32> <- S:0x0<50x8xf32>, N:0x0<6xi64>", "GATHER: destination must be indices x row = 6x8"),
        ("MPU0 GATHER O:0x0<6x8xf32> <- S:0x0<50x8xf32>, N:0x0<6xi64>", "GATHER runs on a DAU unit"),
    ],
)
def test_gather_malformed(line, expect):
    from nnx.sim.asm import parse_instr

    with pytest.raises(Exception) as e:
        parse_instr(line)
    assert expect in str(e.value)


# --------------------------------------------------------------------------------------
# Bad inputs: one line, exit 1, no output written
# --------------------------------------------------------------------------------------

GOOD_HEAD = ".storage 1024\n.input x S:0x0<4xf32>\n.output y S:0x10<4xf32>\n.text\n"


@pytest.mark.parametrize(
    "body,expect",
    [
        ("DAU0 LOAD N:0x0<4xf32> <- S:0x0<4xf32>\nDAU0 LOAD N:0x0<4xf32> <- S:0x0<4xf32\n",
         "p.s:6: error: "),
        ("DAU0 LOAD N:0x100000<4xf32> <- S:0x0<4xf32>\n", "p.s:5: error: tile N:0x100000<4xf32> ends at byte 1048592, beyond the neuron cache"),
        ("MPU3 MatMul O:0x0<1x1xf32> <- N:0x0<1x1xf32>, W:0x0<1x1xf32>\n", "p.s:5: error: unit MPU3 does not exist"),
        ("DAU0 LOAD N:0x0<4xf32> <- S:0x0<4xf32>\nMPU0 WAIT never\nDAU0 WAIT never2\n",
         "p.s:6: error: deadlock: MPU0 waits for token 'never'"),
        ("VPU0 NoSuchOp O:0x0<4xf32> <- O:0x0<4xf32>\n", "p.s:5: error: no kernel for ONNX operator NoSuchOp"),
        ("VPU0 Relu O:0x0<8xf32> <- O:0x0<4xf32>\n", "p.s:5: error: Relu result #0 has shape 4, the destination tile 8"),
    ],
)
def test_bad_programs(tmp_path, capsys, body, expect):
    rc = _run(tmp_path, GOOD_HEAD + body, {"x": np.zeros(4, np.float32)})
    err = capsys.readouterr().err
    assert rc == 1
    assert err.count("\n") == 1 and expect in err, err
    assert err.startswith(str(tmp_path / "p.s"))
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "out" / "y.npy").exists()


@pytest.mark.parametrize(
    "inputs,extra,expect",
    [
        ({"x": np.zeros(5, np.float32)}, [], "input 'x' has shape 5, the program expects 4"),
        ({"x": np.zeros(4, np.int32)}, [], "input 'x' has element type int32"),
        ({"z": np.zeros(4, np.float32)}, [], "the program has no input 'z'"),
        ({}, [], "missing --input for x"),
        ({"x": np.zeros(4, np.float32)}, ["--input", "bad"], "--input expects NAME=FILE.npy"),
        ({"x": np.zeros(4, np.float32)}, ["--bogus"], "unrecognized arguments"),
        ({"x": np.zeros(4, np.float32)}, ["--target", "/nonexistent.toml"], "cannot read"),
    ],
)
def test_bad_invocations(tmp_path, capsys, inputs, extra, expect):
    rc = _run(tmp_path, GOOD_HEAD + "DAU0 LOAD N:0x0<4xf32> <- S:0x0<4xf32>\n", inputs, *extra)
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and expect in err, err
    assert not (tmp_path / "r.json").exists()


def test_bad_data_file(tmp_path, capsys):
    (tmp_path / "p.data").write_bytes(b"\0" * 16)
    text = ".storage 64\n.data p.data S:0x0 16 crc32=0x1234\n.text\n"
    assert _run(tmp_path, text, {}) == 1
    assert "p.s:2: error: data file p.data does not match its crc32" in capsys.readouterr().err
    text = ".storage 64\n.data p.data S:0x0 32\n.text\n"
    assert _run(tmp_path, text, {}) == 1
    assert "has 16 bytes, .data says 32" in capsys.readouterr().err
    text = ".storage 64\n.data missing.data S:0x0 32\n.text\n"
    assert _run(tmp_path, text, {}) == 1
    assert "cannot read data file missing.data" in capsys.readouterr().err


def test_missing_program_file(tmp_path, capsys):
    assert run([str(tmp_path / "nope.s")]) == 1
    assert "nope.s: error: cannot read" in capsys.readouterr().err


def test_matmul_c_initialises_the_accumulators(tmp_path):
    """MPU MatMul with a third source C (broadcast to the destination): A @ B + C; an
    accumulated reduction chunk (acc) adds to it."""
    a = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    b = RNG.standard_normal((2, 8, 5)).astype(np.float32)
    c = RNG.standard_normal((1, 4, 5)).astype(np.float32)
    text = "\n".join([
        ".storage 4096", ".input a S:0x0<2x4x8xf32>", ".input b S:0x100<2x8x5xf32>", ".input c S:0x240<1x4x5xf32>",
        ".output y S:0x300<2x4x5xf32>", ".text",
        "DAU0 LOAD N:0x0<2x4x8xf32> <- S:0x0<2x4x8xf32>",
        "DAU0 LOAD W:0x0<2x8x5xf32> <- S:0x100<2x8x5xf32>",
        "DAU0 LOAD W:0x200<1x4x5xf32> <- S:0x240<1x4x5xf32>",
        "DAU0 SIGNAL l",
        "MPU0 WAIT l",
        "MPU0 MatMul O:0x0<2x4x5xf32> <- N:0x0<2x4x4xf32>[32,8,1], W:0x0<2x4x5xf32>[40,5,1], W:0x200<1x4x5xf32>",
        "MPU0 MatMul O:0x0<2x4x5xf32> <- N:0x10<2x4x4xf32>[32,8,1], W:0x50<2x4x5xf32>[40,5,1], acc",
        "MPU0 SIGNAL m",
        "DAU0 WAIT m",
        "DAU0 STORE S:0x300<2x4x5xf32> <- O:0x0<2x4x5xf32>",
        "",
    ])
    rc = _run(tmp_path, text, {"a": a, "b": b, "c": c})
    assert rc == 0
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), a @ b + c, rtol=1e-5, atol=1e-5)
    from nnx.sim.asm import parse_instr

    with pytest.raises(Exception, match="C .source #2. must broadcast"):
        parse_instr("MPU0 MatMul O:0x0<2x4x5xf32> <- N:0x0<2x4x8xf32>, W:0x0<2x8x5xf32>, W:0x200<3x5xf32>")
