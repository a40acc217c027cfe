"""`nnx-run PROG.s` for a program package (a manifest whose first directive is
`.package`, nnx/sim/package.py):

    nnx-run prog.s --input NAME=FILE.npy ... [--output-dir DIR] [--report R.json]
            [--trace T.json] [--plot timeline.png|.svg] [--target FILE]

runs the programs in order on the mesh simulator and prints `cycles` (weight loads,
host transfers and mesh runs included), `programs`, and per program its weight-load
bytes and host traffic. `--report` writes the same as JSON (`PackageResult.report`),
`--plot` the programs along a time line (nnx/sim/package_plot.py), `--trace` a
Perfetto trace (nnx/sim/package_trace.py). Every problem is one line and exit 1;
output files are written after a successful run, all or none.
"""

from __future__ import annotations

import argparse
import os

from nnx.atomic_file import files_atomically
from nnx.cli import ArgumentParser, UsageError
from nnx.named_arrays import load_inputs, write_outputs
from nnx.sim.package import is_package, read_package, run_package


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="nnx-run", description="Run an nnx program package on the mesh simulator.")
    p.add_argument("program", help="the package manifest (PROG.s)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    p.add_argument("--output-dir", metavar="DIR")
    p.add_argument("--report", metavar="REPORT.json")
    p.add_argument("--trace", metavar="T.json", help="Chrome/Perfetto trace: the package's time line and every core")
    p.add_argument("--plot", metavar="TIMELINE.png",
                   help="the programs along a time line: weight loads, host transfers, mesh runs "
                   "(.png or .svg; docs/pictures.md)")
    p.add_argument("--target", metavar="FILE")
    return p


def wants_package(argv: list[str]) -> bool:
    """True when the command line runs a program package."""
    try:
        args, _ = _parser().parse_known_args(argv)
    except (UsageError, SystemExit):
        return False
    return is_package(args.program)


def run_package_main(argv: list[str]) -> int:
    from nnx.sim.asm_mesh import read_mesh_program
    from nnx.sim.mesh_cli import resolve_target
    from nnx.sim.package import PackageError
    from nnx.figures import figure_bytes, figure_format
    from nnx.sim.package_plot import package_figure
    from nnx.sim.package_trace import build_package_trace
    from nnx.sim.report import report_json
    from nnx.sim.trace import trace_json

    args = _parser().parse_args(argv)
    if args.plot:
        figure_format(args.plot)
    inputs = load_inputs(args.input)
    try:
        pkg = read_package(args.program)
        if not pkg.programs:
            raise PackageError(f"{args.program}: the package has no programs")
        target = resolve_target(args.target, read_mesh_program(pkg.programs[0]))
        result = run_package(pkg, inputs, target, keep_runs=bool(args.trace))
    except PackageError as e:
        raise UsageError(str(e)) from None
    report = result.report()
    print(f"cycles {report['cycles']}")
    print(f"programs {report['programs']}")
    for r in result.runs:
        print(f"  {r.program}: cycles {r.cycles} (weights {r.weight_load_cycles}, host in {r.host_in_cycles}, "
              f"mesh {r.mesh_cycles}, host out {r.host_out_cycles}), weight-load bytes {r.weight_load_bytes}, "
              f"host in {r.host_in_bytes} B, host out {r.host_out_bytes} B")
    if result.host_runs:
        print(f"host steps {report['host_steps']}")
    for h in result.host_runs:
        print(f"  {h.step}: cycles {h.cycles}, read {h.bytes_read} B, written {h.bytes_written} B")
    texts: dict[str, str | bytes] = {}
    if args.report:
        texts[args.report] = report_json(report)
    if args.trace:
        texts[args.trace] = trace_json(build_package_trace(result, target))
    if args.plot:
        title = f"{os.path.basename(args.program)} on {target.name} ({target.mesh.width} x {target.mesh.height} cores)"
        texts[args.plot] = figure_bytes(package_figure(result.runs, title, result.host_runs), args.plot)
    with files_atomically(texts):
        if args.output_dir:
            write_outputs(args.output_dir, result.outputs)
    return 0
