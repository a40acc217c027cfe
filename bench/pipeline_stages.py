"""Diagnostic: the throughput schedule's predicted stage times against the simulator's
(docs/mesh.md, "Schedules", the `throughput` cost model).

Compiles a model for targets/mesh.toml with `--objective throughput`, runs a stream
of N inferences in the mesh simulator, and prints per layer group of the pipeline
its cores, the search's stage time (`pipeline_search.stage_time`) and, over the
group's cores, per inference: the busiest core's busy cycles of each unit type
(MPU, VPU, the busier DMA queue DAU and both queues summed, DAU+), its *active*
cycles (the union of every unit's busy intervals: when the core did anything),
and its span (begin to end of an inference, waits included), each the most over
the group's cores. A stage whose active cycles exceed the search's time is
under-counted by the model; the stream runs at the largest span. Also printed:
the searches the compilation ran (one per try: a retry follows a lowered core that
overflowed) and the mean over all cores of the MPU, DMA and active cycles.

Usage: .venv/bin/python bench/pipeline_stages.py MODEL [--stream N] [--set MODULE.NAME=VALUE ...]
                                                 [--keep DIR]
       (MODEL as bench/mesh.py takes it: resnet50, resnet18, light:squeezenet, ...;
       --keep DIR: the program DIR/p.s and each core's group, DIR/groups.txt, kept)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

import mesh as bench_mesh  # noqa: E402


def union_length(spans: list[tuple[int, int]], lo: int, hi: int) -> int:
    """Cycles within [lo, hi) covered by the intervals `spans`."""
    cut = sorted((max(a, lo), min(b, hi)) for a, b in spans if b > lo and a < hi)
    total, end = 0, lo
    for a, b in cut:
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def core_figures(st, first: int) -> dict[str, float]:
    """A core's per-inference figures over the inferences from `first` on (steady
    state): busy cycles per unit type, active cycles, span."""
    infs = st.inferences[first:] or st.inferences
    lo, hi = infs[0][0], infs[-1][1]
    n = len(infs)
    per: dict[str, float] = {}
    for unit, sp in st.busy_spans.items():
        kind = unit[:3]
        b = union_length(sp, lo, hi) / n
        per[kind] = max(per.get(kind, 0.0), b)
        if kind == "DAU":
            per["DAU+"] = per.get("DAU+", 0.0) + b
    every = [iv for sp in st.busy_spans.values() for iv in sp]
    per["active"] = union_length(every, lo, hi) / n
    per["span"] = float(np.median([e - b for b, e in infs]))
    return per


def res_cores(res) -> int:
    """The mesh's cores (the mean of a balanced pipeline is over all of them)."""
    from nnx.target import load_target

    m = load_target(bench_mesh.MESH).mesh
    return m.width * m.height


def main() -> None:
    argv = sys.argv[1:]
    stream = 16
    if "--stream" in argv:
        k = argv.index("--stream")
        stream = int(argv[k + 1])
        del argv[k:k + 2]
    while "--set" in argv:
        k = argv.index("--set")
        bench_mesh.set_rule(argv[k + 1])
        del argv[k:k + 2]
    keep = None
    if "--keep" in argv:  # the program and each core's group kept for a closer look
        k = argv.index("--keep")
        keep = Path(argv[k + 1])
        del argv[k:k + 2]
    name = argv[0]
    from nnx import api
    from nnx.mesh.compile import compile_for_mesh
    from nnx.mesh.partition import RETURN
    from nnx.named_arrays import safe_name
    from nnx.passes.lower_to_mesh import save_mesh_program
    from nnx.sim.asm_mesh import read_mesh_program
    from nnx.sim.mesh_simulator import MeshSimulator
    from nnx.target import load_target

    path = bench_mesh.model_path(name)
    feeds = bench_mesh.feeds_for(path)
    _, bound = bench_mesh.mac_bound(path)
    module = api.import_onnx(str(path), None, 1)
    api.run_pipeline(module, bench_mesh.GRAPH_PASSES, verify_each=False)
    from nnx.mesh import pipeline_search

    searched = []  # one search per try: a retry follows a lowered core that overflowed
    search = pipeline_search.best_pipeline
    pipeline_search.best_pipeline = lambda *a, **k: searched.append(1) or search(*a, **k)
    comp = compile_for_mesh(module, bench_mesh.MESH, "bisect", schedule="throughput")
    pipeline_search.best_pipeline = search
    pipe = comp.pipeline
    assert pipe is not None, "compiled as " + comp.schedule
    group_of_op = {i: g for g, (a, b, _) in enumerate(pipe.groups) for i in range(a, b)}
    group_of_core: dict[int, int] = {}
    for s, stage in enumerate(comp.plan.stages):
        gs = [group_of_op[i] for i, _ in stage.items if i != RETURN]
        if gs:
            group_of_core[comp.cores[s]] = min(gs)
    with tempfile.TemporaryDirectory() as d:
        asm = str((keep or Path(d)) / "p.s")
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / "groups.txt").write_text("".join(f"{c} {g}\n" for c, g in sorted(group_of_core.items())))
        save_mesh_program(comp, asm)
        sim = MeshSimulator(read_mesh_program(asm), load_target(bench_mesh.MESH))
        res = sim.run({safe_name(k): v for k, v in feeds.items()}, stream=stream)
    first = max(1, stream // 4)
    figs = {c: core_figures(st, first) for c, st in res.cores.items()}
    pi = res.cycles_per_inference
    print(f"== {name}: stream {stream}: {pi:.0f} cycles/inference = {pi / bound:.2f}x bound {bound}; "
          f"the search's bottleneck {pipe.bottleneck:.0f} ({len(searched)} searches)")
    for c in ("MPU", "DAU+", "active"):
        v = [f.get(c, 0.0) for f in figs.values()]
        print(f"  mean over {len(v)} cores {c} {np.mean(v):.0f} (sum / {res_cores(res)}: "
              f"{sum(v) / res_cores(res):.0f})")
    cols = ("MPU", "VPU", "DAU", "DAU+", "active", "span")
    print(f"{'group':>5} {'ops':>9} {'n':>4} {'model':>8} " + " ".join(f"{c:>8}" for c in cols)
          + "  active/model")
    for g, (a, b, n) in enumerate(pipe.groups):
        cs = [c for c, gg in group_of_core.items() if gg == g]
        row = {c: max((figs[x].get(c, 0.0) for x in cs), default=0.0) for c in cols}
        model = pipe.stage_times[g]
        print(f"{g:5d} {a:4d}-{b:<4d} {n:4d} {model:8.0f} " + " ".join(f"{row[c]:8.0f}" for c in cols)
              + f"  {row['active'] / model:6.2f}")


if __name__ == "__main__":
    main()
