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

3. **A compiled model** (`--model NAME [N]`: a CNN with one float input, resnet18,
   mobilenet_v2, a model of bench/mesh.py such as light:squeezenet, or an .onnx path): `nnx-compile --target targets/mesh.toml` (the compiler's default schedule),
   then `nnx-run --stream N` with N distinct random inputs against one `nnx-run`
   (and one with `--weight-load overlap`, the original program start);
   prints the reports' stream fields, the MAC bound (model MACs / mesh MACs per cycle)
   and each inference's largest |error| against onnxruntime.

Usage: .venv/bin/python bench/mesh_stream.py [TILES] [N]     (defaults 8 and 16)
       .venv/bin/python bench/mesh_stream.py --model resnet18 [N]
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


def _model_path(model: str) -> Path:
    """An .onnx path, ResNet-18 / MobileNetV2 at 224 (bench/sim_sparsity.py's exports),
    or any model bench/mesh.py knows (cache/bench-models/, light:NAME)."""
    if model.endswith(".onnx"):
        return Path(model)
    if model in ("resnet18", "mobilenet_v2"):
        from sim_sparsity import get_model

        return get_model(model)[0]
    from mesh import model_path

    return model_path(model)


def model_stream(model: str, n: int) -> None:
    import json
    import subprocess
    import tempfile

    import numpy as np
    import onnx
    import onnxruntime as ort

    path = _model_path(model)
    bindir = Path(sys.executable).parent
    mesh_toml = ROOT / "targets" / "mesh.toml"
    target = load_target(str(mesh_toml))
    with tempfile.TemporaryDirectory() as d:
        w = Path(d)
        t0 = time.perf_counter()
        subprocess.run([bindir / "nnx-compile", path, "--batch", "1", "-o", w / "p.s", "--target", mesh_toml],
                       check=True)
        t1 = time.perf_counter()
        inp = onnx.load(str(path), load_external_data=False).graph.input[0]
        shape = [max(1, x.dim_value) for x in inp.type.tensor_type.shape.dim]
        xs = np.random.default_rng(0).standard_normal([n] + shape).astype(np.float32)
        np.save(w / "xs.npy", xs)
        np.save(w / "x0.npy", xs[0])
        run = [bindir / "nnx-run", w / "p.s", "--target", mesh_toml]
        subprocess.run(run + ["--input", f"{inp.name}={w / 'x0.npy'}", "--report", w / "r1.json",
                              "--output-dir", w / "o1"], check=True)
        t2 = time.perf_counter()
        subprocess.run(run + ["--input", f"{inp.name}={w / 'x0.npy'}", "--report", w / "ro.json",
                              "--weight-load", "overlap"], check=True)
        t2o = time.perf_counter()
        subprocess.run(run + ["--input", f"{inp.name}={w / 'xs.npy'}", "--stream", str(n),
                              "--report", w / "rn.json", "--output-dir", w / "on"], check=True)
        t3 = time.perf_counter()
        r1, rn = json.loads((w / "r1.json").read_text()), json.loads((w / "rn.json").read_text())
        ro = json.loads((w / "ro.json").read_text())
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        errs = []
        for k in range(n):
            refs = sess.run(None, {inp.name: xs[k]})
            for o, ref in zip(sess.get_outputs(), refs):
                got = np.load(w / "on" / f"{o.name}.npy")[k]
                errs.append(float(np.max(np.abs(got - ref))))
        same = all(np.array_equal(np.load(f), np.load(w / "on" / f.name)[0]) for f in (w / "o1").iterdir())
    macs = r1["macs"]
    bound = macs / mesh_macs_per_cycle(target)
    print(f"{path.name} on targets/mesh.toml: {macs / 1e9:.3f} G MACs, MAC bound {bound:,.0f} cycles; "
          f"compile {t1 - t0:.1f} s")
    for name, r in (("one inference", r1), (f"stream of {n}", rn)):
        print(f"  {name}: cycles {r['cycles']:,} (weight load {r['weight_load_cycles']:,}), "
              f"latency_cycles {r['latency_cycles']:,} ({r['latency_cycles'] / bound:.0f}x bound), "
              f"cycles_per_inference {r['cycles_per_inference']:,.0f} ({r['cycles_per_inference'] / bound:.1f}x bound), "
              f"mac_utilization {r['mac_utilization']:.4f}")
    print(f"  ratio single latency / stream cycles_per_inference: "
          f"{r1['latency_cycles'] / rn['cycles_per_inference']:.2f}x; simulated in {t2 - t1:.1f} s (one) "
          f"and {t3 - t2o:.1f} s ({n})")
    print(f"  one inference with --weight-load overlap (the original program start): cycles {ro['cycles']:,} "
          f"(the last core's weights and inputs in at {ro['weight_load_cycles']:,}); "
          f"ratio first / overlap cycles {r1['cycles'] / ro['cycles']:.3f}")
    print(f"  max |error| vs onnxruntime over the {n} inferences: {max(errs):.2e}; "
          f"stream inference 0 identical to the single run: {same}")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--model":
        model_stream(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 16)
        return
    tiles = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    stream(tiles, n)
    multicast_vs_unicast()


if __name__ == "__main__":
    main()
