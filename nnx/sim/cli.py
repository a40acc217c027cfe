"""`nnx-run PROG.s --input NAME=FILE.npy ... --output-dir DIR --report REPORT.json
[--trace T.json] [--target FILE]`: run an assembled program on the reference simulator.

Also runnable as `python -m nnx.sim.cli ...`. Every problem (malformed assembly, an
address outside a cache, a deadlock, a bad input file) is one line on stderr and exit
status 1; output files are only written after a successful run, each atomically.
"""

from __future__ import annotations

import argparse
import os
import sys


from nnx.atomic_file import atomic_open
from nnx.named_arrays import NamedArrayError, load_inputs, write_outputs

from nnx.sim.asm import AsmError, read_program
from nnx.sim.memory import SimError
from nnx.target import TargetError, load_target


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise _Usage(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="nnx-run", description="Run an nnx assembly program on the reference simulator.")
    p.add_argument("program", help="the assembly program (PROG.s)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="value of a program input (repeat per input)")
    p.add_argument("--output-dir", metavar="DIR", help="write each program output as DIR/NAME.npy")
    p.add_argument("--report", metavar="REPORT.json", help="write the run report (cycles, units, bytes, MACs)")
    p.add_argument("--trace", metavar="T.json", help="write a Chrome/Perfetto trace (one track per unit)")
    p.add_argument("--target", metavar="FILE", help="target description (TOML); default: the embedded default")
    p.add_argument("--samples", type=int, default=200, help=argparse.SUPPRESS)
    return p


def _atomic_write(path: str, write) -> None:
    with atomic_open(path, "wb") as f:
        write(f)


def run(argv: list[str] | None = None) -> int:
    from nnx.sim.report import build_report, report_json
    from nnx.sim.simulator import Simulator
    from nnx.sim.trace import build_trace, trace_json

    try:
        args = _parser().parse_args(argv)
        target = load_target(args.target)
        inputs = load_inputs(args.input)
        program = read_program(args.program)
        sim = Simulator(program, target, record_events=True)
        try:
            result = sim.run(inputs)
        except SimError as e:
            raise _Usage(e.msg) from None
        report = build_report(result, target, samples=max(2, args.samples))
        if args.output_dir:
            write_outputs(args.output_dir, result.outputs)
        if args.report:
            text = report_json(report).encode()
            _atomic_write(args.report, lambda f: f.write(text))
        if args.trace:
            text = trace_json(build_trace(result, target, report)).encode()
            _atomic_write(args.trace, lambda f: f.write(text))
    except (_Usage, NamedArrayError) as e:
        print(f"nnx-run: error: {e}", file=sys.stderr)
        return 1
    except (AsmError, TargetError) as e:
        print(str(e), file=sys.stderr)
        return 1
    except OSError as e:
        print(f"nnx-run: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except MemoryError:
        print("nnx-run: error: out of memory", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - never a traceback for the user
        if os.environ.get("NNX_TRACEBACK"):
            raise
        msg = f"{type(e).__name__}: {e}".splitlines()[0]
        print(f"nnx-run: internal error: {msg} (set NNX_TRACEBACK=1 for details)", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
