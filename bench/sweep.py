"""Benchmark: nnx-sweep's local process pool (docs/sweeps.md, "Running on many cores
or a Ray cluster").

The example sweep of docs/sweeps.md (examples/sweep/sweep.toml): 24 points, 3 models
x 2 pipelines (the default, and fold/canonicalize/dce without subgraph splitting:
points of it that do not fit are error rows) x 4 variants of the 4 x 4 test mesh
(width 2 or 4, 512 KiB or 2 MiB cores), with the example's MLPs (width 256, 384 and
512, batch 16, examples/sweep/make_mlps.py) made `--depth` times deeper (default 3:
18, 12 and 9 layers), so that each point (a compilation and a mesh simulation, about
1-6 s) outweighs the start-up that every run pays once. The sweep runs with `--workers 1`, then `--workers 2` (and
with `--ray local` when asked), each from an empty results file; the rows must be
the same (metrics and status; not `seconds`). Prints the wall times and the ratio
workers-2 / workers-1 (target: at most 0.6 on a 2-core machine), with the load
average before and after: the machine may be shared, so measure when it is idle.

Usage: .venv/bin/python bench/sweep.py [--ray] [--repeat N] [--depth K]
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "sweep"
sys.path.insert(0, str(EXAMPLE))

from make_mlps import MODELS, mlp  # noqa: E402 - the example sweep's models


def run(d: Path, name: str, *extra: str) -> tuple[float, list[dict]]:
    out = d / f"{name}.csv"
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "nnx.tools.nnx_sweep", str(d / "s.toml"), "-o", str(out), "--quiet",
                        *extra], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"sweep.py: nnx-sweep {' '.join(extra)} failed: {r.stderr.strip()}")
    with open(out, newline="") as f:
        rows = [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(f)]
    out.unlink()
    return wall, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ray", action="store_true", help="also run on a local Ray cluster")
    ap.add_argument("--repeat", type=int, default=1, help="measure each engine this many times (best is kept)")
    ap.add_argument("--depth", type=int, default=3, help="layers of each model x this (1: the example's models)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nnx-bench-sweep-") as tmp:
        d = Path(tmp)
        for name, width, layers, seed in MODELS:
            mlp(str(d / name), width, layers * args.depth, seed)
        base = ROOT / "test" / "passes" / "lower-to-mesh" / "Inputs" / "mesh4x4.toml"
        (d / "s.toml").write_text((EXAMPLE / "sweep.toml").read_text().replace(
            "../../test/passes/lower-to-mesh/Inputs/mesh4x4.toml", str(base)))
        print(f"load average before: {os.getloadavg()[0]:.2f}; cores: {os.cpu_count()}", flush=True)
        engines = [("workers 1", ("--workers", "1")), ("workers 2", ("--workers", "2"))]
        if args.ray:
            engines.append(("ray local", ("--ray", "local", "--workers", "2")))
        best: dict[str, float] = {}
        reference = None
        for _ in range(args.repeat):
            for name, extra in engines:
                wall, rows = run(d, name.replace(" ", ""), *extra)
                if reference is None:
                    reference = rows
                elif rows != reference:
                    raise SystemExit(f"sweep.py: {name} gave other rows than workers 1")
                best[name] = min(best.get(name, wall), wall)
                print(f"{name:10s}: {wall:6.1f} s", flush=True)
        errors = sum(r["status"] != "ok" for r in reference)
        print(f"points: {len(reference)} ({errors} error rows), the same rows from every engine")
        for name in best:
            print(f"best {name:10s}: {best[name]:6.1f} s  ratio to workers 1: {best[name] / best['workers 1']:.2f}")
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
