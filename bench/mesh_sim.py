"""Benchmark: the mesh simulator's overhead against the single-core simulator.

Workload, on targets/mesh.toml (16 x 16 cores): a pipeline through all 256 cores in
snake order. Each core receives TILES tiles of 64 x 64 f32 from its predecessor
(RECV, double-buffered), multiplies each by its resident 64 x 64 weight (MPU), applies
Relu (VPU) and sends it on (SEND); the first core loads its tiles, the last stores
them. Baseline, in the same run: the same instructions on one core of the
single-core simulator, with each RECV a LOAD and each SEND a STORE.

Prints wall times (assembly and run separately), microseconds per instruction and the
ratio mesh / single-core; also NoC bytes and simulated cycles.

With `--model resnet18` (a name of bench/models.py, or an .onnx path): the model is
compiled for one core of targets/mesh.toml (`nnx-compile --target targets/mesh.toml`),
then run as whole processes by `nnx-run` as a single-core program and as the only core
of a 1 x 1 mesh (the same core with a core memory large enough for the whole model),
against an onnxruntime process; prints the wall-time ratios and checks that both
simulators give identical outputs and the same core cycles.

Usage: .venv/bin/python bench/mesh_sim.py [TILES]            (default 20)
       .venv/bin/python bench/mesh_sim.py --model resnet18
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nnx.sim.asm import parse_program  # noqa: E402
from nnx.sim.asm_mesh import parse_mesh_program  # noqa: E402
from nnx.sim.mesh_simulator import MeshSimulator  # noqa: E402
from nnx.sim.simulator import Simulator  # noqa: E402
from nnx.target import load_target  # noqa: E402

TILE = "<64x64xf32>"


def stage(tiles: int, prev: int | None, nxt: int | None, single: bool, k: int) -> list[str]:
    """The instructions of one pipeline stage; `single`: RECV/SEND become LOAD/STORE and
    tokens get a per-stage suffix (all stages then share one core)."""
    s = f"_{k}" if single else ""
    out = [f"DAU1 LOAD W:0x0{TILE} <- S:0x0{TILE}", f"DAU1 SIGNAL w{s}", f"MPU0 WAIT w{s}"]
    for t in range(tiles):
        b = (t % 2) * 16384
        if t >= 2:
            out.append(f"DAU0 WAIT free{t % 2}{s}")
        if prev is not None and not single:
            out.append(f"DAU0 RECV N:0x{b:x}{TILE} <- @{prev}:a")
        else:
            out.append(f"DAU0 LOAD N:0x{b:x}{TILE} <- S:0x4000{TILE}")
        out += [f"DAU0 SIGNAL in{t}{s}", f"MPU0 WAIT in{t}{s}"]
        if t >= 2:
            out.append(f"MPU0 WAIT sent{t % 2}{s}")
        out += [
            f"MPU0 MatMul O:0x{b:x}{TILE} <- N:0x{b:x}{TILE}, W:0x0{TILE}",
            f"MPU0 SIGNAL free{t % 2}{s}", f"MPU0 SIGNAL mm{t}{s}",
            f"VPU0 WAIT mm{t}{s}", f"VPU0 Relu O:0x{b:x}{TILE} <- O:0x{b:x}{TILE}", f"VPU0 SIGNAL r{t}{s}",
            f"DAU1 WAIT r{t}{s}",
        ]
        if nxt is not None and not single:
            out.append(f"DAU1 SEND @{nxt}:a <- O:0x{b:x}{TILE}")
        else:
            out.append(f"DAU1 STORE S:0x8000{TILE} <- O:0x{b:x}{TILE}")
        out.append(f"DAU1 SIGNAL sent{t % 2}{s}")
    # the single-core baseline drains the token counts of stage k before stage k+1
    if single:
        out += [f"DAU0 WAIT free{t % 2}{s}" for t in range(max(0, tiles - 2), tiles)]
        out += [f"MPU0 WAIT sent{t % 2}{s}" for t in range(max(0, tiles - 2), tiles)]
    return out


def programs(tiles: int, w: int, h: int) -> tuple[str, str]:
    order = [y * w + (x if y % 2 == 0 else w - 1 - x) for y in range(h) for x in range(w)]
    mesh = [".target nnx-mesh", f".mesh {w}x{h}"]
    single = [".storage 49152", ".text"]
    for k, c in enumerate(order):
        prev = order[k - 1] if k else None
        nxt = order[k + 1] if k + 1 < len(order) else None
        mesh += [f".core {c}", ".storage 49152", ".text"] + stage(tiles, prev, nxt, False, k)
        single += stage(tiles, prev, nxt, True, k)
    return "\n".join(mesh) + "\n", "\n".join(single) + "\n"


ORT = """
import sys, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
s.run(None, {s.get_inputs()[0].name: np.load(sys.argv[2])})
"""


def model_run(model: str) -> None:
    import json
    import subprocess
    import tempfile

    import numpy as np
    import onnx

    sys.path.insert(0, str(ROOT / "bench"))
    import models

    path = Path(model) if model.endswith(".onnx") else models.get(model)
    bindir = Path(sys.executable).parent
    mesh_toml = ROOT / "targets" / "mesh.toml"
    with tempfile.TemporaryDirectory() as d:
        w = Path(d)
        subprocess.run([bindir / "nnx-compile", path, "--batch", "1", "-o", w / "p.s", "--target", mesh_toml],
                       check=True)
        inp = onnx.load(str(path), load_external_data=False).graph.input[0]
        shape = [max(1, x.dim_value) for x in inp.type.tensor_type.shape.dim]
        np.save(w / "x.npy", np.random.default_rng(0).standard_normal(shape).astype(np.float32))
        text = mesh_toml.read_text().replace("width = 16", "width = 1").replace("height = 16", "height = 1")
        text = text.replace("core_memory_bytes = 2097152", f"core_memory_bytes = {1 << 30}")
        (w / "m1.toml").write_text(text)
        (w / "m.s").write_text(".mesh 1x1\n.core 0\n" + (w / "p.s").read_text())

        def timed(cmd: list) -> float:
            t = time.perf_counter()
            subprocess.run(cmd, check=True)
            return time.perf_counter() - t

        run = [bindir / "nnx-run"]
        t_single = timed(run + [w / "p.s", "--input", f"{inp.name}={w / 'x.npy'}", "--target", mesh_toml,
                                "--output-dir", w / "o1", "--report", w / "r1.json"])
        t_mesh = timed(run + [w / "m.s", "--input", f"{inp.name}={w / 'x.npy'}", "--target", w / "m1.toml",
                              "--output-dir", w / "o2", "--report", w / "r2.json"])
        t_ort = timed([sys.executable, "-c", ORT, path, w / "x.npy"])
        r1, r2 = json.loads((w / "r1.json").read_text()), json.loads((w / "r2.json").read_text())
        core = r2["cores"]["0"]
        same = all(np.array_equal(np.load(f), np.load(w / "o2" / f.name)) for f in (w / "o1").iterdir())
        print(f"{path.name}: {r1['instructions']} instructions, {r1['cycles']} cycles on one mesh core")
        print(f"whole process: nnx-run single-core {t_single:.2f} s, nnx-run 1x1 mesh {t_mesh:.2f} s, "
              f"onnxruntime {t_ort:.2f} s")
        print(f"ratio mesh simulator / single-core simulator: {t_mesh / t_single:.2f}x")
        print(f"ratio mesh simulator / onnxruntime: {t_mesh / t_ort:.1f}x")
        print(f"outputs identical: {same}; core cycles equal: "
              f"{core['end_cycle'] - core['start_cycle'] == r1['cycles']}; "
              f"weight load: {r2['weight_load_cycles']} cycles for {r2['offchip']['weight_bytes']} bytes")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--model":
        model_run(sys.argv[2])
        return
    tiles = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    target = load_target("mesh")
    mesh_text, single_text = programs(tiles, target.mesh.width, target.mesh.height)

    t0 = time.perf_counter()
    sp = parse_program(single_text, "single.s")
    t1 = time.perf_counter()
    one = Simulator(sp, target, record_events=False).run()
    t2 = time.perf_counter()
    mp = parse_mesh_program(mesh_text, "mesh.s")
    t3 = time.perf_counter()
    res = MeshSimulator(mp, target).run()
    t4 = time.perf_counter()

    n_single = len(sp.instrs)
    n_mesh = sum(len(s.program.instrs) for s in mp.cores.values())
    print(f"workload: {len(mp.cores)} cores x {tiles} tiles of 64x64 f32 (MatMul + Relu), {n_mesh} instructions")
    print(f"single-core simulator: assemble {t1 - t0:.2f} s, run {t2 - t1:.2f} s "
          f"({(t2 - t1) / n_single * 1e6:.1f} us/instr), {one.cycles} cycles")
    print(f"mesh simulator:        assemble {t3 - t2:.2f} s, run {t4 - t3:.2f} s "
          f"({(t4 - t3) / n_mesh * 1e6:.1f} us/instr), {res.cycles} cycles, "
          f"noc_bytes {res.noc_bytes}, noc_byte_hops {res.noc_byte_hops}")
    print(f"ratio mesh / single-core wall time: run {(t4 - t3) / (t2 - t1):.2f}x, "
          f"assemble {(t3 - t2) / (t1 - t0):.2f}x")
    print(f"ratio single-core / mesh simulated cycles: {one.cycles / res.cycles:.1f}x")


if __name__ == "__main__":
    main()
