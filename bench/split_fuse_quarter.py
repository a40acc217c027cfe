"""Program packages on a mesh holding a quarter of the model's weights
(docs/subgraph-split-fuse.md, "Measured"; the acceptance check of program packages).

For each model: its weight bytes W and its largest op's weight bytes w (the
constants its ops use after the graph passes, i.e. what the programs load); a mesh target made from targets/mesh.toml
whose total core memory is at most W / 4, or 2 w where w > W / 4 (the cores: up to
4 x 4, at least 128 KiB each when the budget allows); then, in subprocesses,

    nnx-compile MODEL -o prog.s --target T     (greedy fusion, the default)
    nnx-run prog.s --target T --input ... --report r.json --output-dir out

and max |err| of every output against onnxruntime. An op larger than the whole mesh
is split over several programs with host steps joining its pieces (the report's
`host_steps` and `host_step_bytes`, docs/subgraph-split-fuse.md "Ops larger than
the mesh"). In process, the same chain is
fused with `strategy=optimal` (from the split, a fresh memo: its wall time includes
the split's compilations) to check that nnx-compile's greedy package has at most one
program more and that optimal takes under 60 s. A
failing step prints its one error line.

    .venv/bin/python bench/split_fuse_quarter.py [--models resnet18,bert_2layer] [--no-optimal]
        [--meshes auto,2x2,2x1]

Models: `mlp12`, the zoo's `tiny_resnet`, `mobilenet_v2`, `bert_2layer`,
`gpt2_2layer`, `bert_hidden` (2 x 64, every hidden state an output) or
`bert_hidden_LxH`, the light zoo's `squeezenet` (`squeezenet_random`: random weights and input), full-size `resnet18` and
`mobilenet_v2_224`, and `bench:NAME` for cache/bench-models/NAME.onnx.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "python"))
sys.path.insert(0, HERE)

BIN = os.path.join(ROOT, ".venv", "bin")
BASE_TARGET = os.path.join(ROOT, "targets", "mesh.toml")
GRAPH_PASSES = "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)"
MODELS = ("mlp12", "tiny_resnet", "mobilenet_v2", "bert_2layer", "gpt2_2layer", "bert_hidden", "squeezenet",
          "resnet18", "mobilenet_v2_224")
KIB = 1024


def load_model(name: str, directory: str):
    """(onnx path, feeds, nnx-compile shape arguments) of a benchmark model."""
    import numpy as np

    import model_zoo

    if name.startswith("mlp"):
        from test_package import _mlp_model

        path = os.path.join(directory, f"{name}.onnx")
        _mlp_model(path, layers=int(name[3:]))
        return path, {"x": np.random.default_rng(1).standard_normal((1, 256)).astype(np.float32)}, []
    if name == "bert_hidden":  # every layer's hidden state is an output
        from test_subgraph_split import bert_hidden_feeds, bert_hidden_states_model

        feeds = bert_hidden_feeds()
        return str(bert_hidden_states_model(layers=2, hidden=64)), feeds, _shape_args(feeds)
    if name == "squeezenet":
        x, _ = model_zoo.light_reference("squeezenet")
        path = model_zoo.light_model_path("squeezenet")
        return str(path), {_first_input(path): x}, []
    if name == "squeezenet_random":  # the light zoo's weights are all 0.02: a uniform output
        from test_op_split_spatial import _with_random_weights

        x, _ = model_zoo.light_reference("squeezenet")
        path = _with_random_weights(model_zoo.light_model_path("squeezenet"), os.path.join(directory, f"{name}.onnx"))
        x = np.random.default_rng(0).standard_normal(x.shape).astype(np.float32)
        return str(path), {_first_input(path): x}, []
    if name in ("resnet18", "mobilenet_v2_224") or name.startswith("bench:"):
        from mesh import feeds_for, model_path  # bench/mesh.py: cache/bench-models/NAME.onnx

        path = model_path(name.replace("_224", "").replace("bench:", ""))
        feeds = feeds_for(path)
        return str(path), feeds, _shape_args(feeds)
    if name.startswith("bert_hidden_"):  # bert_hidden_LxH: L layers of width H
        from test_subgraph_split import bert_hidden_feeds, bert_hidden_states_model

        layers, hidden = map(int, name[len("bert_hidden_"):].split("x"))
        feeds = bert_hidden_feeds()
        return str(bert_hidden_states_model(layers=layers, hidden=hidden)), feeds, _shape_args(feeds)
    return str(model_zoo.get_model(name)), model_zoo.sample_inputs(name), model_zoo.input_shape_args(name)


def _first_input(path) -> str:
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    return next(i.name for i in m.graph.input if i.name not in inits)


def _shape_args(feeds) -> list[str]:
    return [a for k, v in feeds.items() for a in ("--input-shape", f"{k}={'x'.join(map(str, v.shape))}")]


def weight_bytes(module) -> int:
    """Bytes of the constants @main's ops use after the graph passes: the weights the
    programs load (the ONNX initializers less what folding removed, plus weights
    built by Constant/ConstantOfShape nodes)."""
    from nnx.split_fuse.chain import main_function, scheduled_ops
    from nnx.split_fuse.fit import range_weights

    ops = scheduled_ops(main_function(module, "bench").body.block)
    return range_weights(ops, (0, len(ops)))


def largest_op_weights(module) -> tuple[int, str]:
    """The largest weight bytes of one scheduled op of @main, and the op's name."""
    from nnx.split_fuse.chain import main_function, scheduled_ops
    from nnx.split_fuse.fit import range_weights

    ops = scheduled_ops(main_function(module, "bench").body.block)
    best = max(range(len(ops)), key=lambda i: range_weights(ops, (i, i + 1)))
    return range_weights(ops, (best, best + 1)), ops[best].name


def quarter_mesh(budget: int, shape: tuple[int, int] | None = None) -> tuple[int, int, int]:
    """(width, height, core memory) with width x height x core memory <= budget: the
    given shape, else the most cores up to 4 x 4 with at least 128 KiB each (at least
    2 x 1: one core is not a mesh target), core memory rounded down to 4 KiB (1 KiB
    for cores under 64 KiB, so a tiny model's mesh stays near its budget)."""
    if shape is None:
        n = max(2, min(16, budget // (128 * KIB)))
        shape = max(((w, h) for w in range(1, 5) for h in range(1, 5) if w * h <= n and w - 1 <= h <= w),
                    key=lambda s: s[0] * s[1])
    w, h = shape
    per_core = budget // (w * h)
    step = 4 * KIB if per_core >= 64 * KIB else KIB
    return w, h, per_core // step * step


def mesh_target(directory: str, width: int, height: int, core_memory: int) -> str:
    """targets/mesh.toml resized to width x height cores of `core_memory` bytes. Each
    cache becomes the largest power of two up to a quarter of the core memory (at most
    the original's), and the preferred tiles shrink with it so that a cache still
    holds 8 of each (the file's rule)."""
    text = open(BASE_TARGET).read()
    cache = min(int(re.search(r"\[caches.neuron\][^\n]*\nbytes = (\d+)", text).group(1)),
                1 << int(math.log2(max(core_memory // 4, 64))))
    tile = 1 << int(math.log2(math.isqrt(cache // 8 // 4)))
    subs = {r"(?m)^width = \d+": f"width = {width}", r"(?m)^height = \d+": f"height = {height}",
            r"(?m)^core_memory_bytes = \d+": f"core_memory_bytes = {core_memory}",
            r"(\[caches\.\w+\][^\n]*\n)bytes = \d+": rf"\g<1>bytes = {cache}",
            r"(?m)^mpu_([mnk]) = \d+": rf"mpu_\1 = {tile}",
            r"(?m)^vpu_elements = \d+": f"vpu_elements = {cache // 8 // 4}",
            r'name = "nnx-mesh"': f'name = "mesh-{width}x{height}-{core_memory // KIB}k"'}
    for pat, rep in subs.items():
        text, n = re.subn(pat, rep, text)
        assert n, pat
    path = os.path.join(directory, f"mesh{width}x{height}_{core_memory // KIB}k.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def _run(cmd: list[str]) -> tuple[int, str, float]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    return p.returncode, (lines[-1] if lines else ""), time.perf_counter() - t0


def optimal_programs(module, target: str) -> tuple[int, float, int]:
    """(programs, wall s, fit checks) of `strategy=optimal` as a user runs it:
    `subgraph-split{target=T},subgraph-fuse{target=T strategy=optimal}` on a copy of
    the module, with a fresh memo (its wall time includes the split's checks; host
    steps are not programs)."""
    from nnx.passes.subgraph_fuse import SubgraphFusePass, fused_function_chain
    from nnx.passes.subgraph_split import split_chain
    from nnx.split_fuse.chain import main_function

    m = module.clone()
    f = main_function(m, "bench")
    t0 = time.perf_counter()
    chain, check = split_chain(f, target)
    fitted = fused_function_chain(f, chain, SubgraphFusePass(target=target, strategy="optimal"), check)
    return sum(not h for h in fitted.host), time.perf_counter() - t0, fitted.check.check_calls


def bench(name: str, directory: str, optimal: bool, shapes: list) -> list[dict]:
    """One row per mesh shape tried (`shapes`; None: `quarter_mesh`'s choice), in
    order, up to the first that compiles and runs."""
    rows = []
    for shape in shapes:
        rows.append(bench_mesh(name, directory, optimal, shape))
        if "error" not in rows[-1]:
            break
    return rows


def bench_mesh(name: str, directory: str, optimal: bool, shape) -> dict:
    import numpy as np
    import onnxruntime as ort

    from nnx import api
    from nnx.importer.shapes import parse_input_shape

    row: dict = {"model": name}
    path, feeds, shape_args = load_model(name, directory)
    shapes = dict(parse_input_shape(s) for s in shape_args[1::2]) or None
    module = api.import_onnx(path, shapes, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    weights = weight_bytes(module)
    op_bytes, op_name = largest_op_weights(module)
    budget = weights // 4 if op_bytes <= weights // 4 else 2 * op_bytes
    w, h, mem = quarter_mesh(budget, shape)
    row.update(weights=weights, largest_op=op_bytes, largest_op_name=op_name, budget=budget,
               mesh=f"{w}x{h}x{mem // KIB}KiB", mesh_bytes=w * h * mem, compile_s="-")
    if mem < 2 * KIB:
        row["error"] = f"a {w}x{h} mesh within {budget} bytes has cores under 2 KiB"
        return row
    target = mesh_target(directory, w, h, mem)
    row.update(weights=weights, largest_op=op_bytes, largest_op_name=op_name, budget=budget,
               mesh=f"{w}x{h}x{mem // KIB}KiB", mesh_bytes=w * h * mem)
    prog = os.path.join(directory, f"{name}.s")
    rc, line, t_compile = _run([os.path.join(BIN, "nnx-compile"), path, "-o", prog, "--target", target, *shape_args])
    row["compile_s"] = round(t_compile, 1)
    if rc:
        row["error"] = line
        return row
    args = [os.path.join(BIN, "nnx-run"), prog, "--target", target, "--report", prog + ".json",
            "--output-dir", prog + ".out"]
    for k, v in feeds.items():
        np.save(os.path.join(directory, f"{name}.{k}.npy"), v)
        args += ["--input", f"{k}={os.path.join(directory, f'{name}.{k}.npy')}"]
    rc, line, t_run = _run(args)
    row["run_s"] = round(t_run, 1)
    if rc:
        row["error"] = line
        return row
    report = json.load(open(prog + ".json"))
    row["programs"] = report.get("programs", 1)
    row["host_steps"] = report.get("host_steps", 0)
    row["host_step_bytes"] = report.get("host_step_bytes", 0)
    row["cycles"] = report["cycles"]
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    err = 0.0
    for out, ref in zip(sess.get_outputs(), sess.run(None, feeds)):
        got = np.load(os.path.join(prog + ".out", re.sub(r"[^A-Za-z0-9_.-]", "_", out.name) + ".npy"))
        err = max(err, float(np.max(np.abs(got.astype(np.float64) - ref))))
    row["max_err"] = err
    if optimal and row["programs"] > 1:  # one program: nothing to fuse
        o, t_opt, calls = optimal_programs(module, target)
        row.update(greedy=row["programs"], optimal=o, optimal_s=round(t_opt, 1), optimal_compiles=calls)
    return row


def _fmt(r: dict) -> str:
    head = (f"| {r['model']} | {r['weights'] / 2**20:.2f} MiB | {r['largest_op'] / 2**20:.2f} MiB | "
            f"{r['mesh']} ({r['mesh_bytes'] / r['weights']:.3f} W) |")
    if "error" in r:
        return head + f" FAILED ({r['compile_s']} s): {r['error']} |"
    opt = (f"greedy {r['greedy']} / optimal {r['optimal']} ({r['optimal_s']} s, {r['optimal_compiles']} compiles)"
           if "optimal" in r else "-")
    return head + (f" {r['programs']} | {r['host_steps']} ({r['host_step_bytes'] / 2**20:.1f} MiB) | "
                   f"{r['cycles']:,} | {r['max_err']:.1e} | {opt} | "
                   f"{r['compile_s']} + {r['run_s']} s |")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--no-optimal", action="store_true", help="skip the optimal-strategy comparison")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    p.add_argument("--meshes", default="auto,2x2,2x1",
                   help="mesh shapes to try in order until one works (auto: up to 4x4, >= 128 KiB a core)")
    args = p.parse_args()
    print("| model | weights W | largest op | mesh (total / W) | programs | host steps (bytes) | cycles | max err | "
          "greedy / optimal | compile + run |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    with tempfile.TemporaryDirectory(prefix="nnx-quarter-") as d:
        for name in args.models.split(","):
            shapes = [None if m == "auto" else tuple(map(int, m.split("x"))) for m in args.meshes.split(",")]
            try:
                rs = bench(name, d, not args.no_optimal, shapes)
            except Exception as e:  # noqa: BLE001 - a benchmark row, not a crash
                rs = [{"model": name, "weights": 1, "largest_op": 0, "mesh": "-", "mesh_bytes": 0, "compile_s": "-",
                       "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}]
            rows.extend(rs)
            for r in rs:
                print(_fmt(r), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    ok = [r for r in rows if "error" not in r]
    failed = sorted({r["model"] for r in rows} - {r["model"] for r in ok})
    bad_err = [r["model"] for r in ok if r["max_err"] > 1e-4]
    bad_opt = [r["model"] for r in ok if "optimal" in r and (r["greedy"] > r["optimal"] + 1 or r["optimal_s"] >= 60)]
    print(f"\n{len(ok)} models ran, failed on every mesh tried: {failed or 'none'}; max err > 1e-4: {bad_err or 'none'}; "
          f"greedy > optimal + 1 or optimal >= 60 s: {bad_opt or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
