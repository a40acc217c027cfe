"""Streams on the mesh simulator (docs/mesh.md, "Streams"): `run(stream=N)` and
`nnx-run --stream N` run N inferences back to back with the weights loaded once.

* a hand-written 2-core pipeline (stage 0 on core 0, stage 1 on core 1; stage work
  set by a number of VPU ops): every inference's output is the numpy result; the
  stream's cycles per inference equal those of its slower stage measured alone (the
  other stage emptied), far below one inference's latency (the stages overlap); the
  receive-buffer depth bounds how far a fast stage runs ahead;
* the nnx-compile mesh program of a small ONNX model (tiny_resnet on the 4x4 test
  mesh): a stream of distinct inputs through nnx-run, each output equal to running
  that inference alone and within 1e-4 of onnxruntime, the report's stream fields
  consistent with the runs.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import model_zoo
from nnx.sim.asm_mesh import parse_mesh_program, read_mesh_program
from nnx.sim.mesh_cli import main as mesh_run
from nnx.sim.mesh_simulator import MeshSimulator
from nnx.target import load_target
from test_mesh_sim import TARGET_FILE, T

TILE = "<16x64xf32>"


def _negs(k: int) -> tuple[str, str]:
    """k VPU Neg ops ping-ponging between N and O: (their text, the result's space)."""
    lines, src = [], "N"
    for _ in range(k):
        dst = "O" if src == "N" else "N"
        lines.append(f"VPU0 Neg {dst}:0x0{TILE} <- {src}:0x0{TILE}")
        src = dst
    return "\n".join(lines), src


def pipeline(k0: int, k1: int) -> str:
    """Core 0 loads x, negates it k0 times and sends it to core 1, which negates it
    k1 times into the output y."""
    n0, s0 = _negs(k0)
    n1, s1 = _negs(k1)
    return f""".mesh 2x2
.core 0
.storage 4096
.input x S:0x0{TILE}
.text
DAU0 LOAD N:0x0{TILE} <- S:0x0{TILE}
DAU0 SIGNAL l
VPU0 WAIT l
{n0}
VPU0 SIGNAL d
DAU0 WAIT d
DAU0 SEND @1:h <- {s0}:0x0{TILE}
.core 1
.storage 4096
.output y S:0x0{TILE}
.text
DAU0 RECV N:0x0{TILE} <- @0:h
DAU0 SIGNAL r
VPU0 WAIT r
{n1}
VPU0 SIGNAL d
DAU0 WAIT d
DAU0 STORE S:0x0{TILE} <- {s1}:0x0{TILE}
"""


N = 8
XS = np.random.default_rng(0).standard_normal((N, 16, 64)).astype(np.float32)


def run(k0, k1, inputs, **kw):
    return MeshSimulator(parse_mesh_program(pipeline(k0, k1), "p.s"), T).run(inputs, **kw)


@pytest.mark.parametrize("k0,k1", [(20, 2), (2, 20)])
def test_a_two_stage_pipeline_runs_at_the_pace_of_its_slower_stage(k0, k1):
    r = run(k0, k1, {"x": XS}, stream=N)
    assert r.outputs["y"].shape == (N, 16, 64)
    for k in range(N):
        np.testing.assert_array_equal(r.outputs["y"][k], XS[k] * (-1) ** (k0 + k1))
        np.testing.assert_array_equal(r.outputs["y"][k], run(k0, k1, {"x": XS[k]}).outputs["y"])
    single = run(k0, k1, {"x": XS[0]})
    # each stage alone (the other one's ops removed): the slower sets the pace
    stage = max(run(k0, 0, {"x": XS}, stream=N).cycles_per_inference,
                run(0, k1, {"x": XS}, stream=N).cycles_per_inference)
    assert r.cycles_per_inference == pytest.approx(stage, rel=0.02)
    # the stages overlap: below one inference's latency
    assert r.cycles_per_inference < single.latency_cycles
    # the first inference meets an empty pipeline, but its output may wait for the
    # off-chip memory behind the next inferences' inputs
    assert r.latency_cycles == r.latencies[0] >= single.latency_cycles
    # a lower bound any schedule obeys: the busiest unit's work per inference
    assert r.cycles_per_inference >= max(max(st.unit_busy.values()) for st in r.cores.values()) / N
    assert len(r.cores[0].inferences) == N and r.inferences == N


def test_receive_buffers_bound_how_far_a_fast_stage_runs_ahead():
    # stage 1 is the slow one: core 0's SEND of inference k waits until core 1 has
    # begun inference k - depth + 1, so core 0 begins inference k + 1 only after that
    # (plus the 256 cycles its 4 KiB take to leave over 16-byte links)
    for depth in (1, 2):
        r = run(2, 20, {"x": XS}, stream=N, depth=depth)
        b0, b1 = [a for a, _ in r.cores[0].inferences], [a for a, _ in r.cores[1].inferences]
        for k in range(depth, N - 1):
            assert b0[k + 1] >= b1[k - depth + 1] + 256
        np.testing.assert_array_equal(r.outputs["y"], XS)
        assert r.latencies[-1] == r.latencies[-2]  # bounded: the queue stops growing
    # with buffers for the whole stream core 0 never waits and the queue keeps growing
    free = run(2, 20, {"x": XS}, stream=N, depth=N)
    assert all(b > a for a, b in zip(free.latencies, free.latencies[1:]))
    assert free.cycles_per_inference == run(2, 20, {"x": XS}, stream=N).cycles_per_inference
    assert run(2, 20, {"x": XS}, stream=N, depth=1).cycles_per_inference > free.cycles_per_inference


def test_one_input_is_reused_by_every_inference_and_weights_load_once(tmp_path):
    r = run(3, 2, {"x": XS[1]}, stream=4)
    np.testing.assert_array_equal(r.outputs["y"], np.stack([-XS[1]] * 4))
    assert r.offchip_bytes["inputs"] == 4 * 4096 and r.offchip_bytes["outputs"] == 4 * 4096


def matmul_program(tmp_path, n: int):
    """test_mesh_sim's y = x @ w over two cores (each core holds half of w, 4 KiB, and
    all of x, 2 KiB), with n random inputs x; returns (xs, w)."""
    from test_mesh_sim import K, M, N as NN, two_core_matmul
    import zlib

    rng = np.random.default_rng(5)
    xs = rng.integers(-8, 8, (n, M, K)).astype(np.float32)
    w = rng.integers(-8, 8, (K, NN)).astype(np.float32)
    halves = [np.ascontiguousarray(w[:, : NN // 2]), np.ascontiguousarray(w[:, NN // 2 :])]
    (tmp_path / "w.data").write_bytes(halves[0].tobytes() + halves[1].tobytes())
    (tmp_path / "p.s").write_text(two_core_matmul("w.data").replace("{crc:08x}", f"{zlib.crc32(halves[1].tobytes()):08x}"))
    np.save(tmp_path / "x.npy", xs)
    return xs, w


def test_stream_of_a_weights_program_reports_mac_utilisation(tmp_path):
    from test_mesh_sim import K, M, N as NN

    xs, w = matmul_program(tmp_path, 3)
    rc = mesh_run([str(tmp_path / "p.s"), "--target", TARGET_FILE, "--input", f"x={tmp_path / 'x.npy'}",
                   "--stream", "3", "--report", str(tmp_path / "r.json"), "--output-dir", str(tmp_path / "o"),
                   "--trace", str(tmp_path / "t.json")])
    assert rc == 0
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "y.npy"), xs @ w)
    rep = json.loads((tmp_path / "r.json").read_text())
    # M x K x N MACs per inference on a 2x2 mesh of 1,024 MACs/cycle cores
    assert rep["mesh_macs_per_cycle"] == 4 * 1024 and rep["macs"] == 3 * M * K * NN
    assert rep["mac_utilization"] == round(M * K * NN / (rep["cycles_per_inference"] * 4096), 6)
    assert rep["weight_load_cycles"] > 0 and rep["inferences"] == 3
    assert rep["latency_cycles"] == rep["inference_latency_cycles"][0]
    assert all(len(c["inferences"]) == 3 for c in rep["cores"].values())
    trace = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    spans = [e for e in trace if e.get("cat") == "inference"]
    assert sorted((e["pid"], e["args"]["inference"]) for e in spans) == [(p, k) for p in (1, 2) for k in range(3)]
    assert [e["args"]["start_cycle"] for e in spans if e["pid"] == 1] == [a for a, _ in rep["cores"]["0"]["inferences"]]
    u = rep["utilisation_over_time"]
    assert len(u["cycles"]) == len(u["mean"]) == len(u["cores"]["0"]) and 0 < max(u["mean"]) <= 1


def test_stream_errors_are_one_line(tmp_path, capsys):
    (tmp_path / "p.s").write_text(pipeline(1, 1))
    np.save(tmp_path / "x.npy", XS[:3, :8])
    base = [str(tmp_path / "p.s"), "--target", TARGET_FILE, "--report", str(tmp_path / "r.json")]
    assert mesh_run(base + ["--input", f"x={tmp_path / 'x.npy'}", "--stream", "3"]) == 1
    assert capsys.readouterr().err.strip() == "nnx-run: error: input 'x' has shape 8x64, the program expects 16x64"
    assert mesh_run(base + ["--stream", "0"]) == 1
    assert capsys.readouterr().err.strip() == "nnx-run: error: --stream must be at least 1, got 0"
    assert not (tmp_path / "r.json").exists()


TARGET4 = os.path.join(os.path.dirname(__file__), "..", "passes", "lower-to-mesh", "Inputs", "mesh4x4.toml")


def test_a_compiled_onnx_model_streams_distinct_inputs(tmp_path, capsys):
    import onnxruntime as ort

    from nnx.tools.nnx_compile import main as compile_main

    model = str(model_zoo.get_model("tiny_resnet"))
    prog = tmp_path / "prog.s"
    assert compile_main([model, "--input-shape", "input=1x3x32x32", "--target", TARGET4, "-o", str(prog)]) == 0
    n = 3
    xs = np.stack([model_zoo.sample_inputs("tiny_resnet", seed=s)["input"] for s in range(n)])
    np.save(tmp_path / "x.npy", xs)
    rc = mesh_run([str(prog), "--target", TARGET4, "--input", f"input={tmp_path / 'x.npy'}", "--stream", str(n),
                   "--report", str(tmp_path / "r.json"), "--output-dir", str(tmp_path / "o")])
    assert rc == 0, capsys.readouterr().err
    got = np.load(tmp_path / "o" / "logits.npy")
    assert got.shape == (n, 1, 10)
    sess = ort.InferenceSession(model)
    mp = read_mesh_program(str(prog))
    singles = []
    for k in range(n):
        one = MeshSimulator(mp, load_target(TARGET4)).run({"input": xs[k]})
        singles.append(one)
        np.testing.assert_array_equal(got[k], one.outputs["logits"])
        np.testing.assert_allclose(got[k], sess.run(None, {"input": xs[k]})[0], rtol=0, atol=1e-4)
    assert not np.allclose(got[0], got[1])  # the inputs really differ
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["inferences"] == n and rep["latency_cycles"] >= singles[0].latency_cycles
    assert rep["cycles_per_inference"] <= singles[0].latency_cycles
    assert rep["weight_load_cycles"] == singles[0].load_cycles > 0
    assert rep["cycles"] > rep["weight_load_cycles"] + rep["latency_cycles"]


def test_the_original_program_start_stays_selectable(tmp_path, capsys):
    xs, w = matmul_program(tmp_path, 1)
    mp = read_mesh_program(str(tmp_path / "p.s"))
    first = MeshSimulator(mp, T).run({"x": xs[0]})
    over = MeshSimulator(mp, T).run({"x": xs[0]}, weight_load="overlap")
    np.testing.assert_array_equal(first.outputs["y"], xs[0] @ w)
    np.testing.assert_array_equal(over.outputs["y"], xs[0] @ w)
    # "first": the two 4 KiB weight halves share 64 bytes/cycle (128 cycles + latency
    # 10 = 138), then each core's 2 KiB x, core 0's reserved first: 138 + 32 + 10 = 180,
    # core 1's after it: 170 + 32 + 10 = 212
    assert first.load_cycles == 138 and {c: st.start for c, st in first.cores.items()} == {0: 180, 1: 212}
    assert first.inference_in == [138]
    # "overlap" (the original start): 6 KiB per core at 32 bytes/cycle each: 192 + 10
    assert over.load_cycles == 202 and {c: st.start for c, st in over.cores.items()} == {0: 202, 1: 202}
    assert over.inference_in == [0] and over.latency_cycles == over.inference_out[0]
    assert mesh_run([str(tmp_path / "p.s"), "--target", TARGET_FILE, "--weight-load", "later"]) == 1
    assert capsys.readouterr().err.strip() == "nnx-run: error: unknown weight load 'later' (one of first, overlap)"


def test_a_simulator_runs_again_from_scratch():
    """One MeshSimulator, a single run then a stream then a single run: each equals the
    run of a fresh simulator (no timeline or totals carried over)."""
    p = parse_mesh_program(pipeline(3, 5), "p.s")
    sim = MeshSimulator(p, T)
    runs = [sim.run({"x": XS[0]}), sim.run({"x": XS[:4]}, stream=4), sim.run({"x": XS[1]})]
    fresh = [MeshSimulator(p, T).run({"x": XS[0]}), MeshSimulator(p, T).run({"x": XS[:4]}, stream=4),
             MeshSimulator(p, T).run({"x": XS[1]})]
    for a, b in zip(runs, fresh):
        assert (a.cycles, a.inference_out, a.noc_bytes, a.link_bytes) == (b.cycles, b.inference_out, b.noc_bytes, b.link_bytes)
        assert {c: (st.inferences, st.unit_busy) for c, st in a.cores.items()} == \
            {c: (st.inferences, st.unit_busy) for c, st in b.cores.items()}
        np.testing.assert_array_equal(a.outputs["y"], b.outputs["y"])


def test_a_multicast_waits_for_the_buffers_of_every_destination():
    """Core 0 multicasts x to cores 1 (2 Negs) and 2 (20 Negs) every inference: with
    depth 2 its SEND of inference k waits for the slow core 2 to begin k - 1."""
    def sink(c, k):
        n, sp = _negs(k)
        return f""".core {c}
.storage 4096
.output y{c} S:0x0{TILE}
.text
DAU0 RECV N:0x0{TILE} <- @0:h
DAU0 SIGNAL r
VPU0 WAIT r
{n}
VPU0 SIGNAL d
DAU0 WAIT d
DAU0 STORE S:0x0{TILE} <- {sp}:0x0{TILE}
"""
    text = f""".mesh 2x2
.core 0
.storage 4096
.input x S:0x0{TILE}
.text
DAU0 SEND @{{1,2}}:h <- S:0x0{TILE}
""" + sink(1, 2) + sink(2, 20)
    r = MeshSimulator(parse_mesh_program(text, "p.s"), T).run({"x": XS}, stream=N)
    np.testing.assert_array_equal(r.outputs["y1"], XS)
    np.testing.assert_array_equal(r.outputs["y2"], XS)
    b0, b1, b2 = ([a for a, _ in r.cores[c].inferences] for c in (0, 1, 2))
    for k in range(2, N - 1):
        assert b0[k + 1] >= b2[k - 1] + 256  # the slow destination holds the sender back
    assert b0[N - 1] - b0[2] > (N - 3) * (b0[1] - b0[0])  # slower than its own pace
    assert r.noc_messages == N and r.noc_bytes == N * 4096
