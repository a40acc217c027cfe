"""Benchmark of nnx-map (issue 4, item 6) against pymetis and random placement,
measured in the same run.

    python bench/neuron_map.py --scale 100k            # 100K neurons / ~10M synapses
    nice -n 10 python bench/neuron_map.py --scale 1m   # 1M / ~100M (heavy)

Graphs: ``sheet`` (2-D sheet, 80 % local synapses within radius 3, 20 % random)
and ``cnn`` (ResNet-18's stem, conv 7x7/2 with 64 channels on a 3xHxW image:
every conv output element is a neuron, its receptive field its synapses, weights
|w| of He-initialised kernels; H=W=72 at 100k, 224 at 1m).

Each tool runs in its own subprocess (wall and peak RSS measured alone):
nnx-map (read .npz, build CSR, partition, place) and pymetis k-way with k = the
number of groups nnx made, vertex weights = sizes, ufactor so every part fits
the capacity, parts placed row-major. Random placement = METIS's parts on a
random permutation of the cores. Ratios are nnx / baseline.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from nnx.topology.cnn_graph import cnn_graph  # noqa: E402
from nnx.topology.graph import from_edges  # noqa: E402
from nnx.topology.mapper import evaluate  # noqa: E402
from nnx.topology.synthetic import sheet_graph  # noqa: E402

SCALES = {"100k": (100_000, 10_000_000, 72), "1m": (1_000_000, 100_000_000, 224)}


def make(kind: str, scale: str, seed: int):
    n, m, hw = SCALES[scale]
    if kind == "sheet":
        pre, post, w = sheet_graph(n, m, seed=seed)
        return pre, post, w, n
    pre, post, w, n, _ = cnn_graph((3, hw, hw), [
        {"op": "conv", "out_channels": 64, "kernel": (7, 7), "stride": (2, 2), "pad": (3, 3)}],
        rng=np.random.default_rng(seed))
    return pre, post, w, n


def run(cmd, env, fatal=True):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode:
        if not fatal:
            return None, p.stderr.strip()
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    return p, time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", choices=sorted(SCALES), default="100k")
    ap.add_argument("--graphs", default="sheet,cnn")
    ap.add_argument("--mesh", default="32x32")
    ap.add_argument("--slack", type=float, default=1.03,
                    help="capacity = ceil(slack * neurons / cores)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--algorithm", default="nnx", help="nnx-map --algorithm (nnx|seed|both)")
    ap.add_argument("--json", help="append results as JSON lines here")
    args = ap.parse_args(argv)
    mw, mh = (int(x) for x in args.mesh.split("x"))
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    algos = ["nnx", "seed"] if args.algorithm == "both" else [args.algorithm]
    with tempfile.TemporaryDirectory(prefix="nnx-bench-") as d:
        for kind in args.graphs.split(","):
            pre, post, w, n = make(kind, args.scale, args.seed)
            path = os.path.join(d, f"{kind}.npz")
            np.savez(path, pre=pre, post=post, weight=w)
            nsyn = pre.size
            g = from_edges(pre, post, w, n=n)
            del pre, post, w
            cap = math.ceil(args.slack * n / (mw * mh))
            print(f"\n== {kind} {args.scale}: {n} neurons, {nsyn} synapses, "
                  f"{g.nnz // 2} undirected edges, mesh {args.mesh}, capacity {cap}", flush=True)
            for algo in algos:
                out, rep = os.path.join(d, "map.npy"), os.path.join(d, "rep.json")
                pp, wall_nnx = run([sys.executable, "-m", "nnx.tools.nnx_map", path, "-o", out,
                                    "--mesh", args.mesh, "--capacity", str(cap), "--seed",
                                    str(args.seed), "--report", rep, "--quiet", "--algorithm",
                                    algo], env, fatal=False)
                if pp is None:
                    print(f"-- nnx-map --algorithm {algo}: {wall_nnx}")
                    continue
                r = json.load(open(rep))
                core = np.load(out)
                ev = evaluate(g, core, mw, cap)
                k = r["groups"]
                mout = os.path.join(d, "metis.npy")
                p, wall_met = run([sys.executable, os.path.join(ROOT, "bench",
                                   "neuron_map_metis.py"), path, str(k), str(cap), mout], env)
                mr = json.loads(p.stdout.strip().splitlines()[-1])
                parts = np.load(mout).astype(np.int64)
                evm = evaluate(g, parts, mw, cap)
                perm = np.random.default_rng(args.seed).permutation(mw * mh)
                evr = evaluate(g, perm[parts], mw, cap)
                res = {
                    "graph": kind, "scale": args.scale, "algorithm": algo, "neurons": n,
                    "synapses": int(nsyn), "groups": k, "capacity": cap,
                    "nnx": {**ev, "wall": wall_nnx, "peak_rss": r["peak_rss_bytes"],
                            "phases": r["wall_seconds"]},
                    "metis": {**evm, "wall": wall_met, **mr},
                    "random": {"hop_traffic": evr["hop_traffic"]},
                }
                print(f"-- nnx-map --algorithm {algo}: {k} groups, max load "
                      f"{ev['max_core_load']}/{cap}, within capacity {ev['within_capacity']}; "
                      f"METIS max load {evm['max_core_load']} "
                      f"(within {evm['within_capacity']})")
                print(f"   phases: {r['wall_seconds']}")
                print(f"   edge cut      nnx {ev['edge_cut']:.4g} ({ev['edge_cut_fraction']:.2%})"
                      f"  METIS {evm['edge_cut']:.4g}   ratio {ev['edge_cut'] / evm['edge_cut']:.3f}")
                print(f"   hop traffic   nnx {ev['hop_traffic']:.4g}  METIS+row-major "
                      f"{evm['hop_traffic']:.4g}   ratio {ev['hop_traffic'] / evm['hop_traffic']:.3f}"
                      f"   (METIS+random {evr['hop_traffic']:.4g}, ratio "
                      f"{ev['hop_traffic'] / evr['hop_traffic']:.3f})")
                print(f"   wall          nnx-map {wall_nnx:.1f}s  pymetis process {wall_met:.1f}s"
                      f" (part_graph {mr['part_graph']:.1f}s)   ratio {wall_nnx / wall_met:.3f}"
                      f" (vs part_graph only {wall_nnx / mr['part_graph']:.3f})")
                print(f"   peak RSS      nnx-map {r['peak_rss_bytes'] / 2**30:.2f} GiB  pymetis "
                      f"{mr['peak_rss'] / 2**30:.2f} GiB   ratio "
                      f"{r['peak_rss_bytes'] / mr['peak_rss']:.3f}", flush=True)
                if args.json:
                    with open(args.json, "a") as f:
                        f.write(json.dumps(res) + "\n")
            del g


if __name__ == "__main__":
    main()
