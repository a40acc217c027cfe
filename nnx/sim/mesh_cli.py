"""`nnx-run PROG.s` for a mesh program (one whose first directive is `.mesh WxH`):

    nnx-run prog.s --input NAME=FILE.npy ... [--output-dir DIR] [--report R.json]
            [--trace T.json] [--plot mesh.png] [--target FILE]

runs every core concurrently on the mesh simulator (mesh_simulator.py). Without
`--target`, the built-in target named by the program's `.target` is used when there is
one (e.g. `nnx-mesh`, targets/mesh.toml), else the embedded default. Every problem is
one line on stderr and exit status 1; output files are written only after a successful
run, each atomically.
"""

from __future__ import annotations

import argparse
import os
import sys

from nnx.atomic_file import atomic_open
from nnx.named_arrays import NamedArrayError, load_inputs, write_outputs
from nnx.sim.asm import AsmError
from nnx.sim.asm_mesh import MeshProgram, is_mesh_text, read_mesh_program
from nnx.sim.memory import SimError
from nnx.target import Target, TargetError, builtin_target_named, load_target


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise _Usage(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="nnx-run", description="Run an nnx mesh program on the mesh simulator.")
    p.add_argument("program", help="the mesh assembly program (PROG.s)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    p.add_argument("--output-dir", metavar="DIR")
    p.add_argument("--report", metavar="REPORT.json")
    p.add_argument("--trace", metavar="T.json", help="Chrome/Perfetto trace: a process per core, a track per unit")
    p.add_argument("--plot", metavar="MESH.png", help="heatmap of core utilisation and link load")
    p.add_argument("--target", metavar="FILE")
    p.add_argument("--samples", type=int, default=200, help=argparse.SUPPRESS)
    return p


def program_path(argv: list[str]) -> str | None:
    """The program argument of an nnx-run command line (None when there is none)."""
    try:
        args, _ = _parser().parse_known_args(argv)
    except (_Usage, SystemExit):
        return None
    return args.program


def is_mesh_program(path: str | None) -> bool:
    """True when `path` is a readable mesh program (its first directive is `.mesh`)."""
    if not path:
        return False
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(1 << 16)
    except (OSError, UnicodeDecodeError):
        return False
    return is_mesh_text(head)


def wants_mesh(argv: list[str]) -> bool:
    """True when the command line runs a mesh program."""
    return is_mesh_program(program_path(argv))


def resolve_target(path: str | None, program: MeshProgram) -> Target:
    if path:
        return load_target(path)
    if program.target:
        t = builtin_target_named(program.target)
        if t is not None:
            return t
    return load_target()


def _atomic_write(path: str, data: bytes) -> None:
    with atomic_open(path, "wb") as f:
        f.write(data)


def run(argv: list[str]) -> int:
    from nnx.sim.mesh_plot import plot_mesh
    from nnx.sim.mesh_simulator import MeshSimulator
    from nnx.sim.report import build_mesh_report, report_json
    from nnx.sim.trace import build_mesh_trace, trace_json

    try:
        args = _parser().parse_args(argv)
        inputs = load_inputs(args.input)
        program = read_mesh_program(args.program)
        target = resolve_target(args.target, program)
        sim = MeshSimulator(program, target, record_events=bool(args.trace))
        try:
            result = sim.run(inputs)
        except SimError as e:
            raise _Usage(e.msg) from None
        report = build_mesh_report(result, target)
        # everything is built before the first file is written: no partial outputs
        report_text = report_json(report).encode() if args.report else b""
        trace_text = trace_json(build_mesh_trace(result, target)).encode() if args.trace else b""
        plot_tmp = args.plot + ".tmp.png" if args.plot else None
        try:
            if plot_tmp:
                mesh = target.mesh
                cyc = max(result.cycles, 1)
                plot_mesh(plot_tmp, mesh.width, mesh.height,
                          {c: max(st.unit_busy.values(), default=0) / cyc for c, st in result.cores.items()},
                          {k: v / cyc for k, v in result.link_cycles.items()})
            if args.output_dir:
                write_outputs(args.output_dir, result.outputs)
            if args.report:
                _atomic_write(args.report, report_text)
            if args.trace:
                _atomic_write(args.trace, trace_text)
            if plot_tmp:
                os.replace(plot_tmp, args.plot)
        finally:
            if plot_tmp and os.path.exists(plot_tmp):
                os.unlink(plot_tmp)
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
