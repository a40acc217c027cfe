"""Topological-order search (topo-reorder) against every baseline, in one run.

    .venv/bin/python bench/topo_order.py [--models a,b,...] [--random 20] [--json out.json]

Per model, all measured here on the default target with the simulator's timing
(nnx/sim/timing.replay, equal to nnx-run's cycles):

* ONNX order, `lower-to-chip{schedule=false}` (the baseline of every ratio below) and
  with the default `schedule=true` (list scheduling alone);
* HEFT order (upward rank at graph level), schedule=false;
* the best of R random topological orders (each compiled and simulated), schedule=false
  (the same R orders topo-reorder's whole-model check draws from with seed 0);
* topo-reorder (default options) with schedule=false, and with schedule=true;
* on subgraphs with at most 24 orders: the proven optimum (every order compiled alone)
  vs the ONNX order and the search's pick;
* how well each cost (estimate, model) ranks a subgraph's orders against simulate
  (Spearman and Kendall over up to 12 orders);
* one candidate's measurement (ONNX order, schedule=true): `lower-to-chip` on chip IR
  (topo-reorder timing=ir) against the direct timing (timing=direct), seconds of each
  and the same measurement asserted;
* where the units idle, in the default pipeline's program of topo-reorder's order
  (schedule=true): the total against the busiest unit's busy cycles (the bound), and
  the largest idle causes (unit waiting on unit before which op kind).

Models: the onnx wheel's light zoo (AlexNet/VGG-19/ZFNet are chain-shaped negative
controls), torchvision GoogLeNet/Inception-v3/DenseNet-121/SqueezeNet-1.1/ShuffleNet-v2
exports (random weights; needs torchvision, see the shim below), randomly wired
networks (Watts-Strogatz graphs, networkx), the zoo's YOLO-like head and a 2-layer BERT.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "test" / "python"))
CACHE = ROOT / "cache" / "bench-models"

LIGHT = ["inception_v1", "inception_v2", "densenet121", "resnet50", "shufflenet",
         "squeezenet", "bvlc_alexnet", "vgg19", "zfnet512"]
TORCHVISION = ["tv_googlenet", "tv_inception_v3", "tv_densenet121", "tv_squeezenet1_1",
               "tv_shufflenet_v2"]
RANDWIRE = ["randwire_ws32_s1", "randwire_ws32_s2"]
OTHER = ["yolo_head", "bert_2layer"]
CHAINS = {"bvlc_alexnet", "vgg19", "zfnet512"}


# --------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------


def _torchvision():
    from models import transformers_importable

    transformers_importable()  # declares torchvision's custom operators
    import torchvision

    return torchvision


def _export_tv(name: str) -> Path:
    import torch

    path = CACHE / f"{name}.onnx"
    if path.exists():
        return path
    tv = _torchvision()
    import model_zoo

    ctor = {
        "tv_googlenet": lambda: tv.models.googlenet(weights=None, aux_logits=False, init_weights=True),
        "tv_inception_v3": lambda: tv.models.inception_v3(weights=None, aux_logits=False, init_weights=True),
        "tv_densenet121": lambda: tv.models.densenet121(weights=None),
        "tv_squeezenet1_1": lambda: tv.models.squeezenet1_1(weights=None),
        "tv_shufflenet_v2": lambda: tv.models.shufflenet_v2_x1_0(weights=None),
    }[name]
    torch.manual_seed(0)
    model = ctor().eval()
    model_zoo._randomise(model)
    hw = 299 if name == "tv_inception_v3" else 224
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.onnx.export(model, (torch.randn(1, 3, hw, hw),), str(tmp), input_names=["x"],
                      output_names=["y"], opset_version=17, dynamo=False)
    tmp.replace(path)
    return path


def randwire_model(n: int = 32, k: int = 4, p: float = 0.75, seed: int = 1, ch: int = 32, hw: int = 28):
    """A randomly wired network (RandWire): a Watts-Strogatz graph oriented from lower
    to higher node index; a node sums its inputs, then ReLU -> 3x3 conv; nodes without
    inputs read the stem, nodes without outputs are averaged into the result."""
    import networkx as nx
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    g = nx.watts_strogatz_graph(n, k, p, seed=seed)
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    ins = {v: sorted(u for u in g.neighbors(v) if u < v) for v in g.nodes}
    outs = {v: [u for u in g.neighbors(v) if u > v] for v in g.nodes}

    def conv(src, dst, tag):
        w = numpy_helper.from_array((rng.standard_normal((ch, ch, 3, 3)) * 0.05).astype(np.float32), f"w{tag}")
        inits.append(w)
        nodes.append(helper.make_node("Conv", [src, w.name], [dst], pads=[1, 1, 1, 1]))

    conv("x", "stem", "stem")
    for v in sorted(g.nodes):
        srcs = [f"n{u}" for u in ins[v]] or ["stem"]
        acc = srcs[0]
        for j, s in enumerate(srcs[1:]):
            nodes.append(helper.make_node("Add", [acc, s], [f"s{v}_{j}"]))
            acc = f"s{v}_{j}"
        nodes.append(helper.make_node("Relu", [acc], [f"r{v}"]))
        conv(f"r{v}", f"n{v}", v)
    sinks = [f"n{v}" for v in g.nodes if not outs[v]]
    nodes.append(helper.make_node("Sum", sinks, ["y"]))
    graph = helper.make_graph(nodes, "randwire",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, ch, hw, hw])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, ch, hw, hw])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def load(name: str):
    """The model `name` imported into a graph-dialect module."""
    from nnx.importer import import_model, import_onnx

    if name in LIGHT:
        import model_zoo

        return import_onnx(str(model_zoo.light_model_path(name)))
    if name.startswith("tv_"):
        return import_onnx(str(_export_tv(name)))
    if name.startswith("randwire_ws"):  # randwire_ws<nodes>_s<seed>
        nodes, seed = name[len("randwire_ws"):].split("_s")
        return import_model(randwire_model(n=int(nodes), seed=int(seed)))
    import model_zoo

    if name == "yolo_head":
        return import_onnx(str(model_zoo.get_export("yolo_head", "ts", 17)))
    if name == "bert_2layer":
        shapes = {k: v[0] for k, v in model_zoo.MODEL_INPUTS[name].items()}
        return import_onnx(str(model_zoo.get_model(name)), shapes)
    raise KeyError(name)


# --------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------


def _ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a, b) -> float:
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
    return num / den if den else float("nan")


def kendall(a, b) -> float:
    c = d = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            s = (a[i] - a[j]) * (b[i] - b[j])
            c += s > 0
            d += s < 0
    return (c - d) / (c + d) if c + d else float("nan")


def geomean(xs) -> float:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


# --------------------------------------------------------------------------------------
# one model
# --------------------------------------------------------------------------------------


def bench_model(name: str, n_random: int, exhaustive_limit: int = 24, quick: bool = False) -> dict:
    from nnx.dialects.chip import ProgramOp
    from nnx.ir_io import make_context
    from nnx.passes.lower_to_chip import LowerToChipPass
    from nnx.passes.topo_reorder import TopoReorderPass
    from nnx.target import load_target
    from nnx.topo_order import orders as O
    from nnx.topo_order.compile_cache import CompileCache, measure
    from nnx.sim.timing import replay
    from nnx.topo_order.cost import estimate_order, op_cost
    from nnx.topo_order.dag import build_dag
    from nnx.topo_order.extract import extract_function, ordered_clone
    from nnx.topo_order.search import SearchOptions, _producers, search_order

    target = load_target()
    module = load(name)
    f = next(iter(module.body.block.ops))
    fname = f.sym_name.data
    dag = build_dag(f.body.block)
    n = len(dag)
    onnx = tuple(range(n))
    row: dict = {"model": name, "ops": n}

    def whole(order, schedule):
        return measure(ordered_clone(module, fname, order), "", schedule, keep_faster=schedule).simulate

    row["onnx_sf"] = whole(onnx, False)
    row["onnx_st"] = whole(onnx, True)
    # one candidate's measurement, ONNX order, schedule=true as topo-reorder's default
    # search compiles it: lower-to-chip on chip IR (timing=ir) against the direct
    # timing (timing=direct, a fresh tile-plan memo); the same cycles, asserted
    t0 = time.monotonic()
    ir = measure(ordered_clone(module, fname, onnx), "", True)
    t1 = time.monotonic()
    from nnx.lowering.plan_memo import plan_memo

    with plan_memo():
        direct = measure(ordered_clone(module, fname, onnx), "", True, direct=True)
    t2 = time.monotonic()
    assert ir == direct, (ir, direct)
    row["measure_ir_s"], row["measure_direct_s"] = round(t1 - t0, 2), round(t2 - t1, 2)
    costs = [op_cost(op, target) for op in dag.ops]
    rank = O.upward_ranks(n, dag.succs, [c.compute for c in costs])
    heft = O.heft_order(onnx, dag.preds, rank)
    row["heft_sf"] = whole(heft, False) if heft != onnx else row["onnx_sf"]
    rng = random.Random(0)
    rand = [O.random_order(onnx, dag.preds, rng) for _ in range(n_random)]
    distinct = list(dict.fromkeys(rand))
    cache = CompileCache("", False, 2)
    ms = cache.measure_all([ordered_clone(module, fname, o) for o in distinct])
    row["random_best_sf"] = min(m.simulate for m in ms)
    row["random_distinct"] = len(distinct)

    for sched, key in ((False, "topo_sf"), (True, "topo_st")):
        m = module.clone()
        t0 = time.monotonic()
        TopoReorderPass(schedule=sched, report=f"/tmp/bench_topo_{name}_{key}.json").apply(make_context(), m)
        row[key + "_seconds"] = round(time.monotonic() - t0, 1)
        row[key] = measure(m.clone(), "", sched, keep_faster=sched).simulate
        rep = json.loads(Path(f"/tmp/bench_topo_{name}_{key}.json").read_text())
        row[key + "_chosen"] = rep["chosen"]
        row[key + "_random_compiled"] = rep.get("random_whole_orders_compiled", 0)
        row[key + "_local_compiled"] = rep.get("local_search_orders_compiled", 0)
        row["subgraphs"] = len(rep["subgraphs"])
        row["key_nodes"] = len(rep["key_nodes"])
        if sched:
            chosen_st = m

    # where the units idle: the default pipeline's program of topo-reorder's order
    # (schedule=true), against the bound (the busiest unit's busy cycles)
    m = chosen_st.clone()
    LowerToChipPass().apply(make_context(), m)

    prog = next(op for op in m.walk() if isinstance(op, ProgramOp))
    r = replay([op.to_instr() for op in prog.instructions()], target, record=True)
    busiest = max(r.busy, key=r.busy.get)
    row["bound_unit"] = busiest
    row["bound_busy"] = r.busy[busiest]
    row["idle_cycles"] = r.cycles
    row["busy"] = {u: b for u, b in r.busy.items() if b}
    top = sorted(r.waits.items(), key=lambda kv: -kv[1])[:4]
    row["top_waits"] = [f"{u} on {on} before {kind}: {c:,d}" for (u, on, kind), c in top]
    row["idle_busiest"] = r.cycles - r.busy[busiest]
    if quick:
        row.update(optimum=[], rank_correlation={})
        return row
    # proven optimum on small subgraphs (every order compiled alone), schedule=false
    res = search_order(module, fname, SearchOptions(schedule=False, verify=False, jobs=2), target)
    opt_rows, corr = [], []
    small = [s for s in res.subgraphs if s.orders_total.isdigit() and 2 <= int(s.orders_total) <= exhaustive_limit]
    for s in small[:3]:
        all_o = O.all_orders(s.nodes, dag.preds, exhaustive_limit) or []
        ms = cache.measure_all([extract_function(dag, o) for o in all_o])
        sim = {o: m.simulate for o, m in zip(all_o, ms)}
        opt_rows.append({"ops": len(s.nodes), "orders": len(all_o), "onnx": sim[tuple(s.nodes)],
                         "search": sim[tuple(s.best_order)], "optimum": min(sim.values())})
    # ranking quality of the costs: the largest subgraph with several orders
    big = max(res.subgraphs, key=lambda s: len(s.tried))
    if len(big.tried) >= 4:
        sample = [tuple(t["order"]) for t in big.tried[:: max(1, len(big.tried) // 12)]][:12]
        ms = cache.measure_all([extract_function(dag, o) for o in sample])
        prods = _producers(dag)
        est = [estimate_order(o, dag.preds, costs, target, prods) for o in sample]
        sim = [m.simulate for m in ms]
        mod = [m.model for m in ms]
        corr = {"orders": len(sample),
                "estimate_spearman": round(spearman(est, sim), 3), "estimate_kendall": round(kendall(est, sim), 3),
                "model_spearman": round(spearman(mod, sim), 3), "model_kendall": round(kendall(mod, sim), 3)}
    row["optimum"] = opt_rows
    row["rank_correlation"] = corr

    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(LIGHT + TORCHVISION + RANDWIRE + OTHER))
    ap.add_argument("--random", type=int, default=20)
    ap.add_argument("--json", default="")
    ap.add_argument("--quick", action="store_true",
                    help="only the baselines and topo-reorder (no optimum, ranking, idle analysis)")
    args = ap.parse_args(argv)
    rows = []
    for name in [m for m in args.models.split(",") if m]:
        t0 = time.monotonic()
        try:
            row = bench_model(name, args.random, quick=args.quick)
        except Exception as e:  # noqa: BLE001 - a model that cannot be built here
            print(f"{name}: skipped ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})", flush=True)
            continue
        row["bench_seconds"] = round(time.monotonic() - t0, 1)
        rows.append(row)
        b = row["onnx_sf"]
        print(f"{name:18s} ops {row['ops']:4d} sub {row['subgraphs']:3d} | onnx {b:>9,d} | "
              f"heft {row['heft_sf'] / b:.4f} rand{args.random} {row['random_best_sf'] / b:.4f} "
              f"sched {row['onnx_st'] / b:.4f} | topo sf {row['topo_sf'] / b:.4f} "
              f"({row['topo_sf_seconds']} s, {row['topo_sf_chosen']}, {row['topo_sf_random_compiled']} rand) topo st {row['topo_st'] / b:.4f} "
              f"({row['topo_st_seconds']} s, {row['topo_st_chosen']}) | local sf/st {row['topo_sf_local_compiled']}/"
              f"{row['topo_st_local_compiled']} | bound {row['bound_unit']} {row['idle_cycles'] / row['bound_busy']:.3f}x | "
              f"measure ir/direct {row['measure_ir_s']}/{row['measure_direct_s']} s",
              flush=True)
        for o in row["optimum"]:
            print(f"    exhaustive subgraph ({o['ops']} ops, {o['orders']} orders): onnx/opt "
                  f"{o['onnx'] / o['optimum']:.4f} search/opt {o['search'] / o['optimum']:.4f}", flush=True)
        if row["rank_correlation"]:
            print(f"    ranking vs simulate: {row['rank_correlation']}", flush=True)
        if row["top_waits"]:
            print(f"    idle: {'; '.join(row['top_waits'])}", flush=True)
    branchy = [r for r in rows if r["model"] not in CHAINS]
    if branchy:
        print(f"geomean over {len(branchy)} branchy models (vs ONNX order, schedule=false): "
              f"topo sf {geomean([r['topo_sf'] / r['onnx_sf'] for r in branchy]):.4f}, "
              f"heft {geomean([r['heft_sf'] / r['onnx_sf'] for r in branchy]):.4f}, "
              f"random-best {geomean([r['random_best_sf'] / r['onnx_sf'] for r in branchy]):.4f}; "
              f"topo st vs sched alone {geomean([r['topo_st'] / r['onnx_st'] for r in branchy]):.4f}")
        worse = [r["model"] for r in rows
                 if r["topo_sf"] > min(r["onnx_sf"], r["heft_sf"], r["random_best_sf"]) or r["topo_st"] > r["onnx_st"]]
        print(f"models where topo-reorder loses to a baseline: {worse or 'none'}")
    if args.json:
        from nnx.atomic_file import atomic_open

        with atomic_open(args.json) as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
