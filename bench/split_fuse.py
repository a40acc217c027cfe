"""Split and fuse on the mesh (docs/subgraph-split-fuse.md, "Measured").

Per model and mesh size, in the same run: program count and total package cycles
(weight loads, host transfers and mesh runs, nnx/sim/package.py) for

* one op per program (the baseline),
* the split alone (target nodes, then halving until every subgraph compiles),
* each fusion strategy (pairwise, greedy, bidirectional) and the optimal dynamic
  program (fewest programs), starting from the split and from one op per program,

with the compile calls each step made (each strategy starts from the compilations
of its starting chain, memoised within the strategy) and its wall time. Ratios are
against the one-op-per-program baseline of the same run.

    .venv/bin/python bench/split_fuse.py [--models mlp12,bert_2layer] [--quick]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "python"))

GRAPH_PASSES = "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)"
BASE_TARGET = os.path.join(ROOT, "test", "passes", "lower-to-mesh", "Inputs", "mesh4x4.toml")


def mesh_target(directory: str, width: int, height: int, core_memory: int) -> str:
    text = open(BASE_TARGET).read()
    text = re.sub(r"width = \d+", f"width = {width}", text)
    text = re.sub(r"height = \d+", f"height = {height}", text)
    text = re.sub(r"core_memory_bytes = \d+", f"core_memory_bytes = {core_memory}", text)
    path = os.path.join(directory, f"mesh{width}x{height}_{core_memory // 1024}k.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def load_model(name: str, directory: str):
    """(onnx path, feeds, input shapes) of a zoo model or of `mlpN` (N Gemm+Relu layers)."""
    import numpy as np

    import model_zoo

    if name.startswith("mlp"):
        from test_package import _mlp_model

        path = os.path.join(directory, f"{name}.onnx")
        _mlp_model(path, layers=int(name[3:]))
        return path, {"x": np.random.default_rng(1).standard_normal((1, 256)).astype(np.float32)}, None
    shapes = {k: s for k, (s, _) in model_zoo.MODEL_INPUTS[name].items()}
    return str(model_zoo.get_model(name)), model_zoo.sample_inputs(name), shapes


def package_cycles(check, chain, feeds, directory, target) -> int:
    from nnx.sim.package import read_package, run_package, write_package
    from nnx.target import load_target

    outs = [d.data["nnx.name"].data for d in check.f.res_attrs.data]
    path = os.path.join(directory, "prog.s")
    write_package([check.compile(r) for r in chain], outs, path)
    return run_package(read_package(path), feeds, load_target(target)).cycles


def bench(name: str, mesh: tuple[int, int, int], directory: str) -> None:
    from nnx import api
    from nnx.split_fuse.chain import main_function, ranges_from_cuts, scheduled_ops, target_nodes
    from nnx.split_fuse.fit import FitChecker, split_until_fit
    from nnx.split_fuse.fuse import Fuser, FusionWindow, fuse_chain

    path, feeds, shapes = load_model(name, directory)
    target = mesh_target(directory, *mesh)
    module = api.import_onnx(path, shapes, 1 if shapes else None)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    f = main_function(module, "bench")
    ops = scheduled_ops(f.body.block)
    label = f"{name} {mesh[0]}x{mesh[1]}x{mesh[2] // 1024}KiB"
    rows = []
    check = FitChecker(f, target)
    t0 = time.perf_counter()
    one = split_until_fit(check, [(i, i + 1) for i in range(len(ops))], "halve", "bench")
    rows.append(("one op per program", one, check.check_calls, time.perf_counter() - t0))
    one_memo = {k: dict(v) for k, v in check.found.items()}
    split_check = FitChecker(f, target)  # the split-and-fuse flow starts afresh
    t0 = time.perf_counter()
    cuts = ranges_from_cuts(len(ops), target_nodes(ops, f.body.block.last_op))
    split = split_until_fit(split_check, cuts, "halve", "bench")
    rows.append(("split alone", split, split_check.check_calls, time.perf_counter() - t0))
    for start, chain, memo in (("split", split, {k: dict(v) for k, v in split_check.found.items()}),
                                 ("1-op", one, one_memo)):
        for strategy in ("pairwise", "greedy", "bidirectional", "optimal"):
            c = FitChecker(f, target)
            c.found = {k: dict(v) for k, v in memo.items()}  # each strategy pays for its own fusion checks
            t0 = time.perf_counter()
            fused = fuse_chain(Fuser(c, FusionWindow()), chain, strategy)
            rows.append((f"{start} + {strategy}", fused, c.check_calls, time.perf_counter() - t0))
            for k, v in c.found.items():
                check.found[k].update(v)
    base = None
    print(f"\n{label}: {len(ops)} ops")
    print(f"  {'flow':22s} {'programs':>8s} {'cycles':>10s} {'vs 1-op':>8s} {'checks':>8s} {'wall s':>7s}")
    for what, chain, calls, wall in rows:
        cyc = package_cycles(check, chain, feeds, directory, target)
        base = base or cyc
        print(f"  {what:22s} {len(chain):8d} {cyc:10d} {cyc / base:8.3f} {calls:8d} {wall:7.1f}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="mlp12,bert_2layer")
    p.add_argument("--quick", action="store_true", help="one mesh size per model")
    args = p.parse_args()
    meshes = {"mlp12": [(3, 2, 131072), (4, 4, 131072)], "bert_2layer": [(2, 2, 262144), (3, 3, 262144)]}
    with tempfile.TemporaryDirectory() as d:
        for name in args.models.split(","):
            for mesh in meshes.get(name, [(2, 2, 262144)])[: 1 if args.quick else None]:
                bench(name, mesh, d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
