"""`nnx-run PROG.s --input NAME=FILE.npy ... --output-dir DIR --report REPORT.json
[--trace T.json] [--target FILE]`: run an assembled program on the reference simulator.

Also runnable as `python -m nnx.sim.cli ...`. Every problem (malformed assembly, an
address outside a cache, a deadlock, a bad input file) is one line on stderr and exit
status 1, an internal error one line and exit 2 (nnx/cli.py); the output files are
only written after a successful run, all of them or none.
"""

from __future__ import annotations

import argparse
import sys

from nnx.atomic_file import files_atomically
from nnx.cli import ArgumentParser, run_tool
from nnx.named_arrays import load_inputs, write_outputs
from nnx.sim.asm import read_program
from nnx.target import load_target

PROG = "nnx-run"


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="nnx-run", description="Run an nnx assembly program on the reference simulator.")
    p.add_argument("program", help="the assembly program (PROG.s)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="value of a program input (repeat per input)")
    p.add_argument("--output-dir", metavar="DIR", help="write each program output as DIR/NAME.npy")
    p.add_argument("--report", metavar="REPORT.json", help="write the run report (cycles, units, bytes, MACs)")
    p.add_argument("--trace", metavar="T.json", help="write a Chrome/Perfetto trace (one track per unit)")
    p.add_argument("--target", metavar="FILE", help="target description (TOML); default: the embedded default")
    p.add_argument("--samples", type=int, default=200, help=argparse.SUPPRESS)
    return p


def simulate_main(argv: list[str]) -> int:
    """The simulator mode of nnx-run (errors propagate to nnx.cli.run_tool)."""
    from nnx.sim.report import build_report, report_json
    from nnx.sim.simulator import Simulator
    from nnx.sim.trace import build_trace, trace_json

    args = _parser().parse_args(argv)
    target = load_target(args.target)
    inputs = load_inputs(args.input)
    program = read_program(args.program)
    result = Simulator(program, target, record_events=True).run(inputs)
    report = build_report(result, target, samples=max(2, args.samples))
    files: dict[str, str] = {}
    if args.report:
        files[args.report] = report_json(report)
    if args.trace:
        files[args.trace] = trace_json(build_trace(result, target, report))
    with files_atomically(files):
        if args.output_dir:
            write_outputs(args.output_dir, result.outputs)
    return 0


def run(argv: list[str] | None = None) -> int:
    """`nnx-run PROG.s ...` with nnx's one error path; the exit status."""
    return run_tool(PROG, simulate_main, argv)


def main(argv: list[str] | None = None) -> int:
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
