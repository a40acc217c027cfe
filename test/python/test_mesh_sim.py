"""The mesh simulator (nnx/sim/mesh_simulator.py) on small hand-written mesh programs:
NoC routing and contention, the off-chip load/store, a ring, a deadlock, a 2-core
matmul against the 1-core program, and nnx-run's report/trace/plot.

Every cycle count below is computed by hand from test/sim/Inputs/mesh2x2.toml: a 2x2
mesh of default cores, hop latency 2, links of 16 bytes/cycle, off-chip memory
64 bytes/cycle (one core's DMA: 64 bytes/cycle) with a latency of 10 cycles.
Instruction i of a core is fetched at 32 + (i + 1) cycles after the core starts
(one instruction-cache refill of 32 cycles, 16 bytes/cycle of fetch).
"""

from __future__ import annotations

import json
import os
import zlib

import numpy as np
import pytest

from nnx.sim.asm import AsmError, parse_program
from nnx.sim.asm_mesh import parse_mesh_program
from nnx.sim.mesh_cli import main as mesh_run
from nnx.sim.mesh_simulator import MeshSimulator
from nnx.sim.simulator import Simulator
from nnx.target import load_target

HERE = os.path.dirname(__file__)
TARGET_FILE = os.path.join(HERE, "..", "sim", "Inputs", "mesh2x2.toml")
T = load_target(TARGET_FILE)


def run(text: str, inputs=None, path="<mesh>", record=True):
    prog = parse_mesh_program(text, path)
    return MeshSimulator(prog, T, record_events=record).run(inputs)


def events(result, core, name):
    return [e for e in result.cores[core].events if e.name == name]


def test_a_tile_from_core_0_reaches_core_3_at_the_computed_cycle():
    r = run("""
.mesh 2x2
.core 0
.storage 256
.text
DAU0 SEND @3:t0 <- S:0x0<4x16xf32>
.core 3
.storage 256
.text
DAU0 RECV S:0x0<4x16xf32> <- @0:t0
""")
    # SEND fetched at 33 (no off-chip load: no weights, no inputs); 256 bytes = 16
    # cycles per link; route (0,1),(1,3): 2 hops of 2 cycles -> arrival 33 + 4 + 16
    (send,) = events(r, 0, "SEND")
    (recv,) = events(r, 3, "RECV")
    assert (send.start, send.end) == (33, 33 + 16)
    assert (recv.start, recv.end) == (33, 53)
    assert r.noc_bytes == 256 and r.noc_byte_hops == 512
    assert r.link_bytes == {(0, 1): 256, (1, 3): 256}
    assert r.cycles == 53
    # the receiver's DAU is busy while the 16 cycles of data arrive
    assert r.cores[3].unit_busy["DAU0"] == 16


def test_two_messages_sharing_a_link_wait_for_each_other():
    r = run("""
.mesh 2x2
.core 0
.storage 256
.text
DAU0 SEND @3:a <- S:0x0<4x16xf32>
.core 1
.storage 256
.text
DAU0 SEND @3:b <- S:0x0<4x16xf32>
.core 3
.storage 512
.text
DAU0 RECV S:0x0<4x16xf32> <- @0:a
DAU0 RECV S:0x100<4x16xf32> <- @1:b
""")
    # core 0's message holds link (1,3) during [35, 51); core 1's (same ready cycle 33,
    # one hop over (1,3)) starts at 51 and arrives at 51 + 2 + 16 = 69
    (a,) = events(r, 0, "SEND")
    (b,) = events(r, 1, "SEND")
    assert (a.start, a.end) == (33, 49)
    assert (b.start, b.end) == (33, 67)  # the DMA is held while the link is busy
    r1, r2 = events(r, 3, "RECV")
    assert r1.end == 53 and r2.end == 69
    assert r.link_bytes[(1, 3)] == 512 and r.link_cycles[(1, 3)] == 32
    assert r.cycles == 69


def test_a_ring_of_cores_negates_three_times():
    # 0 -> 1 -> 3 -> 2 -> 0, each hop one link; cores 1, 3 and 2 negate the tile
    stage = """.core {c}
.storage 64
.text
DAU0 RECV N:0x0<4x4xf32> <- @{prev}:r
DAU0 SIGNAL got
VPU0 WAIT got
VPU0 Neg O:0x0<4x4xf32> <- N:0x0<4x4xf32>
VPU0 SIGNAL done
DAU0 WAIT done
DAU0 SEND @{nxt}:r <- O:0x0<4x4xf32>
"""
    text = """.mesh 2x2
.core 0
.storage 128
.input x S:0x0<4x4xf32>
.output y S:0x40<4x4xf32>
.text
DAU0 SEND @1:r <- S:0x0<4x4xf32>
DAU0 RECV S:0x40<4x4xf32> <- @2:r
""" + stage.format(c=1, prev=0, nxt=3) + stage.format(c=3, prev=1, nxt=2) + stage.format(c=2, prev=3, nxt=0)
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    r = run(text, {"x": x})
    np.testing.assert_array_equal(r.outputs["y"], -x)
    # core 0 loads x (64 bytes: 1 cycle + latency 10) and starts at 11; its SEND is
    # fetched at 11 + 33 = 44; a 64-byte message takes 1 hop x 2 + 4 cycles = 6.
    # Each stage: RECV ends at arrival a, Neg takes 4 + 1 cycles, SEND at a + 5.
    assert r.load_cycles == 0 and r.cores[0].start == 11  # no weights: x streams in at once
    arrivals = [44 + 6]
    for _ in range(3):
        arrivals.append(arrivals[-1] + 5 + 6)
    assert events(r, 1, "RECV")[0].end == arrivals[0]
    assert events(r, 3, "RECV")[0].end == arrivals[1]
    assert events(r, 2, "RECV")[0].end == arrivals[2]
    assert events(r, 0, "RECV")[0].end == arrivals[3] == 83
    # y (64 bytes) then goes off-chip: 1 cycle + 10
    assert r.store_cycles == 83 + 11 and r.cycles == 94
    assert r.noc_messages == 4 and r.noc_byte_hops == 4 * 64


def test_weights_share_the_off_chip_bandwidth(tmp_path):
    # three cores load 640, 640 and 64 bytes of weights from one shared 64 bytes/cycle:
    # 64/3 bytes/cycle each until core 2's 64 bytes are in (cycle 3); then 32 each for
    # the 576 bytes left of cores 0 and 1 (18 cycles): in at 21. Plus latency 10.
    text = ".mesh 2x2\n"
    blob = bytearray()
    for c, n in ((0, 640), (1, 640), (2, 64)):
        text += f".core {c}\n.storage {n}\n.data w.data S:0x0 {n} offset={len(blob)}\n.text\n"
        blob += bytes(range(256)) * (n // 256) + bytes(n % 256)
    (tmp_path / "w.data").write_bytes(bytes(blob))
    r = run(text, path=str(tmp_path / "w.s"))
    assert {c: st.start for c, st in r.cores.items()} == {0: 31, 1: 31, 2: 13}
    assert r.load_cycles == 31 and r.offchip_bytes["weights"] == 1344
    # the image is in each core's memory
    sim = MeshSimulator(parse_mesh_program(text, str(tmp_path / "w.s")), T)
    assert bytes(sim.cores[1].storage.buf[:640]) == bytes(blob[640:1280])


def test_deadlock_names_every_blocked_receive():
    text = """.mesh 2x2
.core 0
.storage 64
.text
DAU0 RECV S:0x0<4xf32> <- @1:a
DAU0 SEND @1:b <- S:0x0<4xf32>
.core 1
.storage 64
.text
DAU0 RECV S:0x0<4xf32> <- @0:b
DAU0 SEND @0:a <- S:0x0<4xf32>
"""
    with pytest.raises(AsmError) as e:
        run(text, path="ring.s")
    assert str(e.value) == (
        "ring.s:5: error: deadlock: core 0 DAU0 RECV of core 1 -> core 0 tag 'a' can never complete; "
        "also blocked: core 1 DAU0 RECV of core 0 -> core 1 tag 'b' (line 10)"
    )


def test_deadlock_on_a_token_inside_a_mesh():
    text = """.mesh 2x2
.core 2
.storage 64
.text
MPU0 WAIT never
"""
    with pytest.raises(AsmError, match=r":5: error: deadlock: core 2 MPU0 WAIT for token 'never'"):
        run(text)


def test_mesh_of_another_size_is_refused():
    with pytest.raises(AsmError, match="the program is for a 4x4 mesh, the target 'mesh-2x2-test' has 2x2"):
        run(".mesh 4x4\n.core 0\n.storage 4\n.text\n")


def test_core_memory_limit():
    with pytest.raises(AsmError, match=r":3: error: core 0: .storage 4194304 exceeds the core memory"):
        run(".mesh 2x2\n.core 0\n.storage 4194304\n.text\n")


# ---- a matmul split over two cores by output columns vs. the 1-core program ------------

M, K, N = 8, 64, 32


def single_core_matmul() -> str:
    xb, wb, yb = 0, M * K * 4, M * K * 4 + K * N * 4
    return f"""
.storage {yb + M * N * 4}
.input x S:0x{xb:x}<{M}x{K}xf32>
.input w S:0x{wb:x}<{K}x{N}xf32>
.output y S:0x{yb:x}<{M}x{N}xf32>
.text
DAU0 LOAD N:0x0<{M}x{K}xf32> <- S:0x{xb:x}<{M}x{K}xf32>
DAU0 LOAD W:0x0<{K}x{N}xf32> <- S:0x{wb:x}<{K}x{N}xf32>
DAU0 SIGNAL ld
MPU0 WAIT ld
MPU0 MatMul O:0x0<{M}x{N}xf32> <- N:0x0<{M}x{K}xf32>, W:0x0<{K}x{N}xf32>
MPU0 SIGNAL mm
DAU0 WAIT mm
DAU0 STORE S:0x{yb:x}<{M}x{N}xf32> <- O:0x0<{M}x{N}xf32>
"""


def two_core_matmul(data_file: str) -> str:
    """Core c computes columns [16c, 16c+16) with its half of w (a weights image at
    offset c * K * 16 * 4 of one data file); core 1 sends its half to core 0, which
    writes both halves into y with strided tiles."""
    h = N // 2
    half = K * h * 4
    xb, wb = 0, M * K * 4
    yb = wb + half
    common = f"""DAU0 LOAD N:0x0<{M}x{K}xf32> <- S:0x{xb:x}<{M}x{K}xf32>
DAU0 LOAD W:0x0<{K}x{h}xf32> <- S:0x{wb:x}<{K}x{h}xf32>
DAU0 SIGNAL ld
MPU0 WAIT ld
MPU0 MatMul O:0x0<{M}x{h}xf32> <- N:0x0<{M}x{K}xf32>, W:0x0<{K}x{h}xf32>
MPU0 SIGNAL mm
DAU0 WAIT mm
"""
    return f"""
.target mesh-2x2-test
.mesh 2x2
.core 0
.storage {yb + M * N * 4}
.data {data_file} S:0x{wb:x} {half}
.input x S:0x{xb:x}<{M}x{K}xf32>
.output y S:0x{yb:x}<{M}x{N}xf32>
.text
{common}DAU0 STORE S:0x{yb:x}<{M}x{h}xf32>[{N},1] <- O:0x0<{M}x{h}xf32>
DAU0 RECV S:0x{yb + h * 4:x}<{M}x{h}xf32>[{N},1] <- @1:y1
.core 1
.storage {wb + half}
.data {data_file} S:0x{wb:x} {half} offset={half} crc32=0x{{crc:08x}}
.input x S:0x{xb:x}<{M}x{K}xf32>
.text
{common}DAU0 SEND @0:y1 <- O:0x0<{M}x{h}xf32>
"""


def test_two_core_matmul_equals_the_single_core_program(tmp_path):
    rng = np.random.default_rng(3)
    # small integers: every dot product is exact in f32, so results must be identical
    x = rng.integers(-8, 8, (M, K)).astype(np.float32)
    w = rng.integers(-8, 8, (K, N)).astype(np.float32)
    one = Simulator(parse_program(single_core_matmul()), load_target()).run({"x": x, "w": w})
    halves = [np.ascontiguousarray(w[:, : N // 2]), np.ascontiguousarray(w[:, N // 2 :])]
    (tmp_path / "w.data").write_bytes(halves[0].tobytes() + halves[1].tobytes())
    text = two_core_matmul("w.data").replace("{crc:08x}", f"{zlib.crc32(halves[1].tobytes()):08x}")
    (tmp_path / "p.s").write_text(text)
    two = MeshSimulator(parse_mesh_program(text, str(tmp_path / "p.s")), T).run({"x": x})
    np.testing.assert_array_equal(two.outputs["y"], one.outputs["y"])
    np.testing.assert_array_equal(two.outputs["y"], x @ w)
    assert two.macs == one.macs == M * K * N
    assert two.noc_bytes == M * (N // 2) * 4

    # a stale weights image is refused with the line of its .data
    (tmp_path / "w.data").write_bytes(halves[0].tobytes() + (halves[1] + 1).tobytes())
    with pytest.raises(AsmError, match=r"p.s:\d+: error: data file w.data does not match its crc32"):
        MeshSimulator(parse_mesh_program(text, str(tmp_path / "p.s")), T)


def test_nnx_run_writes_report_trace_and_plot(tmp_path, capsys):
    rng = np.random.default_rng(4)
    x = rng.integers(-8, 8, (M, K)).astype(np.float32)
    w = rng.integers(-8, 8, (K, N)).astype(np.float32)
    halves = [np.ascontiguousarray(w[:, : N // 2]), np.ascontiguousarray(w[:, N // 2 :])]
    (tmp_path / "w.data").write_bytes(halves[0].tobytes() + halves[1].tobytes())
    text = two_core_matmul("w.data").replace("{crc:08x}", f"{zlib.crc32(halves[1].tobytes()):08x}")
    (tmp_path / "p.s").write_text(text)
    np.save(tmp_path / "x.npy", x)
    # no --target: `.target mesh-2x2-test` is not built in -> the 4x4 default is refused
    assert mesh_run([str(tmp_path / "p.s"), "--input", f"x={tmp_path / 'x.npy'}"]) == 1
    assert "the program is for a 2x2 mesh" in capsys.readouterr().err
    from tools.nnx_run import main as nnx_run_main  # the dispatch of nnx-run

    out = tmp_path / "out"
    rc = nnx_run_main([str(tmp_path / "p.s"), "--target", TARGET_FILE, "--input", f"x={tmp_path / 'x.npy'}",
                       "--output-dir", str(out), "--report", str(tmp_path / "r.json"),
                       "--trace", str(tmp_path / "t.json"), "--plot", str(tmp_path / "m.png")])
    assert rc == 0, capsys.readouterr().err
    np.testing.assert_array_equal(np.load(out / "y.npy"), x @ w)
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["noc_bytes"] == M * 16 * 4 and rep["noc_byte_hops"] == M * 16 * 4
    assert rep["cycles"] >= rep["cores"]["0"]["end_cycle"] > rep["weight_load_cycles"] > 0
    assert rep["links"] == {"1->0": {"bytes": 512, "busy_cycles": 32,
                                     "utilisation": round(32 / rep["cycles"], 6)}}
    assert rep["cores"]["1"]["units"]["MPU0"]["busy_cycles"] == 16 + M * K * 16 // 1024
    trace = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    procs = {e["args"]["name"] for e in trace if e["name"] == "process_name"}
    assert procs == {"core 0", "core 1", "NoC"}
    links = [e for e in trace if e.get("cat") == "NoC"]
    assert len(links) == 1 and links[0]["args"]["cycles"] == 32  # 512 bytes over 16 bytes/cycle
    assert any(e["name"] == "RECV" and e["pid"] == 1 for e in trace)
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_nnx_run_errors_leave_no_files(tmp_path, capsys):
    (tmp_path / "p.s").write_text(".mesh 2x2\n.core 0\n.storage 64\n.text\nDAU0 SEND @1:t <- S:0x0<4xf32>\n")
    rc = mesh_run([str(tmp_path / "p.s"), "--target", TARGET_FILE, "--report", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.strip() == (f"{tmp_path / 'p.s'}:5: error: SEND of core 0 -> core 1 tag 't' has no matching "
                           "RECV on core 1 (core 1 has no .core section)")
    assert not (tmp_path / "r.json").exists()


def test_a_compiled_single_core_program_runs_unchanged_as_one_core_of_a_mesh(tmp_path):
    """Differential: the single-core program `nnx-compile` writes for examples/tiny_cnn.onnx,
    placed as core 5 of a 4x4 mesh, gives the same outputs, and the core's own cycles
    (from its start after the off-chip load) equal the single-core run's."""
    import subprocess
    import sys

    root = os.path.join(HERE, "..", "..")
    exe = os.path.join(os.path.dirname(sys.executable), "nnx-compile")
    subprocess.run([exe, os.path.join(root, "examples", "tiny_cnn.onnx"), "--batch", "1",
                    "-o", str(tmp_path / "p.s")], check=True, capture_output=True)
    single_text = (tmp_path / "p.s").read_text()
    single = parse_program(single_text, str(tmp_path / "p.s"))
    x = np.random.default_rng(5).standard_normal(single.inputs[0].tile.shape).astype(np.float32)
    name = single.inputs[0].name
    one = Simulator(single, load_target()).run({name: x})

    (tmp_path / "m.s").write_text(".mesh 4x4\n.core 5\n" + single_text)
    mesh = MeshSimulator(parse_mesh_program((tmp_path / "m.s").read_text(), str(tmp_path / "m.s")), load_target())
    r = mesh.run({name: x})
    assert set(r.outputs) == set(one.outputs)
    for k in one.outputs:
        np.testing.assert_array_equal(r.outputs[k], one.outputs[k])
    st = r.cores[5]
    # its weights are in first (load_cycles), then its input streams in and it begins
    assert r.inference_in == [r.load_cycles] and st.start > r.load_cycles > 0
    assert st.end - st.start == one.cycles
    assert st.unit_busy == one.unit_busy
    assert r.offchip_bytes["weights"] == sum(seg.size for seg in single.data)
    assert r.cycles == r.store_cycles > st.end and r.noc_bytes == 0


def test_a_unit_the_core_lacks_is_refused_with_its_line():
    text = ".mesh 2x2\n.core 0\n.storage 16\n.text\nDAU1 SEND @1:t <- S:0x0<4xf32>\n.core 1\n.storage 16\n.text\nDAU0 RECV S:0x0<4xf32> <- @0:t\n"
    with pytest.raises(AsmError, match=r"^<mesh>:5: error: unit DAU1 does not exist in the target"):
        run(text)


def test_missing_and_misshaped_inputs():
    from nnx.sim.memory import SimError

    text = ".mesh 2x2\n.core 0\n.storage 16\n.input x S:0x0<4xf32>\n.text\n.core 2\n.storage 16\n.input x S:0x0<4xf32>\n.text\n"
    with pytest.raises(SimError, match="missing --input for x"):
        run(text, {})
    with pytest.raises(SimError, match="input 'x' has shape 3, the program expects 4"):
        run(text, {"x": np.zeros(3, np.float32)})
    r = run(text, {"x": np.ones(4, np.float32)})
    # each holder gets a copy: 16 bytes each from the shared off-chip memory
    assert r.offchip_bytes["inputs"] == 32


def test_heatmap_colours_busy_cores_and_loaded_links():
    from nnx.sim.mesh_plot import mesh_image

    img = mesh_image(2, 2, {0: 1.0, 3: 0.0}, {(0, 1): 1.0}, cell=9)
    gap, pitch = 3, 12
    assert tuple(img[gap + 4, gap + 4]) == (150, 0, 0)  # core 0 fully busy: dark red
    assert tuple(img[gap + pitch + 4, gap + pitch + 4]) == (255, 255, 255)  # core 3 idle
    # link 0->1 (east-bound): first half of the gap between columns 0 and 1 of row 0
    assert tuple(img[gap + 1, gap + 9 + 1]) == (0, 0, 160)
    # link 1->0 unused: its half of the gap stays white
    assert tuple(img[gap + 4 + 2, gap + 9 + 1]) == (255, 255, 255)
