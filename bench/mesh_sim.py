"""Benchmark: the mesh simulator's overhead against the single-core simulator.

Workload, on targets/mesh.toml (16 x 16 cores): a pipeline through all 256 cores in
snake order. Each core receives TILES tiles of 64 x 64 f32 from its predecessor
(RECV, double-buffered), multiplies each by its resident 64 x 64 weight (MPU), applies
Relu (VPU) and sends it on (SEND); the first core loads its tiles, the last stores
them. Baseline, in the same run: the same instructions on one core of the
single-core simulator, with each RECV a LOAD and each SEND a STORE.

Prints wall times (assembly and run separately), microseconds per instruction and the
ratio mesh / single-core; also NoC bytes and simulated cycles.
Usage: .venv/bin/python bench/mesh_sim.py [TILES]   (default 20)
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


def main() -> None:
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
