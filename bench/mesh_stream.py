"""Benchmark: streams and multicast on the mesh simulator (docs/mesh.md, "Streams",
"Multicast"), on targets/mesh.toml (16 x 16 cores, 256 MACs/cycle each).

1. **Stream.** The 256-stage pipeline of bench/mesh_sim.py (every core multiplies
   TILES 64 x 64 f32 tiles by its resident weight, applies Relu and sends them on, in
   snake order) run as one inference, then as a stream of N inferences
   (`run(stream=N)`). Baseline in the same run: N single inferences one after another
   (N x the single latency). Prints the single latency, the stream's
   `cycles_per_inference`, their ratio (the pipeline speed-up), the MAC utilisation of
   both, and the simulator's wall time per inference.
2. **Multicast.** Core 0 sends one 64 x 64 f32 tile to every other core: one multicast
   SEND to the set {1-255} against 255 unicast SENDs (the baseline); prints
   `noc_byte_hops`, the cycle the last core has it, and their ratios.

Usage: .venv/bin/python bench/mesh_stream.py [TILES] [N]     (defaults 8 and 16)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from mesh_sim import programs  # noqa: E402

from nnx.sim.asm_mesh import parse_mesh_program  # noqa: E402
from nnx.sim.mesh_simulator import MeshSimulator  # noqa: E402
from nnx.sim.report import mesh_macs_per_cycle  # noqa: E402
from nnx.target import load_target  # noqa: E402

TILE = "<64x64xf32>"


def stream(tiles: int, n: int) -> None:
    target = load_target("mesh")
    text, _ = programs(tiles, target.mesh.width, target.mesh.height)
    mp = parse_mesh_program(text, "pipeline.s")
    peak = mesh_macs_per_cycle(target)
    t0 = time.perf_counter()
    one = MeshSimulator(mp, target).run()
    t1 = time.perf_counter()
    many = MeshSimulator(mp, target).run(stream=n)
    t2 = time.perf_counter()
    util_one = one.macs / (one.latency_cycles * peak)
    util_many = many.macs / n / (many.cycles_per_inference * peak)
    print(f"stream: {len(mp.cores)}-stage pipeline, {tiles} tiles of 64x64 f32 per stage and inference")
    print(f"  single inference: latency {one.latency_cycles} cycles, MAC utilisation {util_one:.4f}, "
          f"simulated in {t1 - t0:.2f} s")
    print(f"  stream of {n}: cycles_per_inference {many.cycles_per_inference:.1f}, latencies "
          f"{min(many.latencies)}..{max(many.latencies)}, MAC utilisation {util_many:.4f}, "
          f"simulated in {t2 - t1:.2f} s ({(t2 - t1) / n:.2f} s per inference)")
    print(f"  ratio single latency / stream cycles_per_inference: {one.latency_cycles / many.cycles_per_inference:.1f}x; "
          f"{n} single inferences / the stream (first input to last output): "
          f"{n * one.latency_cycles / (many.inference_out[-1] - many.inference_in[0]):.1f}x")


def broadcast(multicast: bool, w: int, h: int) -> str:
    cores = w * h
    text = [".target nnx-mesh", f".mesh {w}x{h}", ".core 0", ".storage 16384", ".text"]
    if multicast:
        text.append(f"DAU0 SEND @{{1-{cores - 1}}}:b <- S:0x0{TILE}")
    else:
        text += [f"DAU{c % 2} SEND @{c}:b <- S:0x0{TILE}" for c in range(1, cores)]
    for c in range(1, cores):
        text += [f".core {c}", ".storage 16384", ".text", f"DAU0 RECV S:0x0{TILE} <- @0:b"]
    return "\n".join(text) + "\n"


def multicast_vs_unicast() -> None:
    target = load_target("mesh")
    w, h = target.mesh.width, target.mesh.height
    res = {}
    for mc in (False, True):
        r = MeshSimulator(parse_mesh_program(broadcast(mc, w, h), "b.s"), target).run()
        res[mc] = r
        kind = "1 multicast SEND" if mc else f"{w * h - 1} unicast SENDs"
        print(f"broadcast of 16 KiB from core 0 to {w * h - 1} cores, {kind}: noc_bytes {r.noc_bytes}, "
              f"noc_byte_hops {r.noc_byte_hops}, last core has it at cycle {r.cycles}")
    u, m = res[False], res[True]
    print(f"  ratio unicasts / multicast: byte-hops {u.noc_byte_hops / m.noc_byte_hops:.1f}x, "
          f"cycles {u.cycles / m.cycles:.1f}x")


def main() -> None:
    tiles = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    stream(tiles, n)
    multicast_vs_unicast()


if __name__ == "__main__":
    main()
