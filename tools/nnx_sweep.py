"""nnx-sweep: compile and run models over a grid of targets and pipelines (docs/sweeps.md).

    nnx-sweep SWEEP.toml -o RESULTS.csv [--workers N] [--ray ADDRESS|auto|local]
              [--plot OUT.png|OUT.svg] [--quiet]

Reads the sweep file (nnx/sweep/spec.py), makes every point (model x pipeline x
combination of grid values, nnx/sweep/points.py), skips the points RESULTS.csv
already holds (by content hash) and runs the others on a local process pool of
`--workers` processes (default: the cores) or as Ray tasks (`--ray`;
nnx/executor.py). Each finished point is appended to RESULTS.csv at once
(nnx/sweep/results.py); a point that does not compile, fit or run is a row with its
one-line error. A progress bar goes to stderr. When every point is in, RESULTS.csv is
rewritten in point order and `--plot` draws the trade-off (nnx/sweep/plot.py).

A mistake in the sweep file (an unknown key, an empty grid, a missing model) is one
line naming the file and the key, exit status 1, and no results file.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from nnx.executor import WORKER_ENV

# the parallelism is across points: one BLAS thread in this process and its workers
for _var, _n in WORKER_ENV.items():
    os.environ.setdefault(_var, _n)

from nnx.cli import ArgumentParser, UsageError, run_tool  # noqa: E402

PROG = "nnx-sweep"


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description="Compile and run models over a grid of targets and pipelines.")
    p.add_argument("sweep", metavar="SWEEP.toml", help="the sweep file (docs/sweeps.md)")
    p.add_argument("-o", "--output", required=True, metavar="RESULTS.csv",
                   help="results, one row per point; appended to, and resumed from, when it exists")
    p.add_argument("--workers", type=int, default=0, metavar="N", help="local worker processes (default: the cores)")
    p.add_argument("--ray", metavar="ADDRESS",
                   help="run the points as Ray tasks: a cluster address, 'auto', or 'local' (start one for this run)")
    p.add_argument("--plot", metavar="OUT.png", help="draw the trade-off the sweep explored (.png or .svg)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def _main(argv: list[str]) -> int:
    from tqdm import tqdm

    from nnx.figures import figure_format, save_figure
    from nnx.sweep.evaluate import evaluate_point, preload
    from nnx.executor import default_workers, run_points
    from nnx.sweep.plot import sweep_figure
    from nnx.sweep.points import sweep_points
    from nnx.sweep.results import ResultsFile, columns
    from nnx.sweep.spec import load_sweep

    args = _parser().parse_args(argv)
    if args.workers < 0:
        raise UsageError(f"--workers {args.workers}: must be at least 1")
    if args.plot:
        figure_format(args.plot)
    if not os.path.isdir(os.path.dirname(os.path.abspath(args.output))):
        raise UsageError(f"-o {args.output}: directory does not exist")
    spec = load_sweep(args.sweep)
    points = sweep_points(spec)
    results = ResultsFile(args.output, columns(spec))
    todo = [p for p in points if p.key not in results.rows]
    if todo and not args.ray:
        preload()  # the local workers are forked from here
    workers = args.workers or default_workers()
    where = f"Ray ({args.ray})" if args.ray else f"{workers} worker{'s' * (workers > 1)}"
    with tqdm(total=len(points), initial=len(points) - len(todo), desc=PROG, unit="point", file=sys.stderr,
              disable=args.quiet, dynamic_ncols=True) as bar:
        bar.set_postfix_str(where)
        for row in run_points(todo, evaluate_point, workers, args.ray):
            results.append(row)
            bar.update(1)
    results.rewrite([p.key for p in points])
    rows = [results.rows[p.key] for p in points]
    if args.plot:
        target = spec.base.get("target", {}).get("name", "target")
        title = f"{os.path.basename(args.sweep)}: {len(spec.models)} models on {target} variants, {len(points)} points"
        save_figure(sweep_figure(rows, spec, title), args.plot)
    errors = sum(r["status"] != "ok" for r in rows)
    print(f"{PROG}: {len(points)} points ({len(todo)} computed, {len(points) - len(todo)} already in "
          f"{args.output}), {errors} with an error status", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(PROG, _main, argv)


if __name__ == "__main__":
    sys.exit(main())
