"""`nnx-run PROG.s` for a mesh program (one whose first directive is `.mesh WxH`):

    nnx-run prog.s --input NAME=FILE.npy ... [--output-dir DIR] [--report R.json]
            [--trace T.json] [--plot mesh.png] [--target FILE]
            [--stream N [--stream-depth D]]

runs every core concurrently on the mesh simulator (mesh_simulator.py). With
`--stream N` it runs N inferences back to back (docs/mesh.md, "Streams"): an input
file whose leading axis is N gives each inference its own input, every output file
holds the N outputs stacked along a leading axis. Without
`--target`, the built-in target named by the program's `.target` is used when there is
one (e.g. `nnx-mesh`, targets/mesh.toml), else the embedded default. Every problem is
one line on stderr and exit status 1 (an internal error: exit 2; nnx/cli.py); output
files are written only after a successful run, all of them or none.
"""

from __future__ import annotations

import argparse
import sys

from nnx.atomic_file import files_atomically
from nnx.cli import ArgumentParser, UsageError, run_tool
from nnx.named_arrays import load_inputs, write_outputs
from nnx.sim.asm_mesh import MeshProgram, is_mesh_text, read_mesh_program
from nnx.target import Target, builtin_target_named, load_target


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="nnx-run", description="Run an nnx mesh program on the mesh simulator.")
    p.add_argument("program", help="the mesh assembly program (PROG.s)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    p.add_argument("--output-dir", metavar="DIR")
    p.add_argument("--report", metavar="REPORT.json")
    p.add_argument("--trace", metavar="T.json", help="Chrome/Perfetto trace: a process per core, a track per unit")
    p.add_argument("--plot", metavar="MESH.png", help="heatmap of core utilisation and link load")
    p.add_argument("--target", metavar="FILE")
    p.add_argument("--stream", type=int, metavar="N",
                   help="run N inferences back to back (weights loaded once); outputs gain a leading axis of N")
    p.add_argument("--stream-depth", type=int, default=2, metavar="D",
                   help="receive buffers per message name in a stream (default 2: double-buffered)")
    p.add_argument("--samples", type=int, default=200, help=argparse.SUPPRESS)
    return p


def program_path(argv: list[str]) -> str | None:
    """The program argument of an nnx-run command line (None when there is none)."""
    try:
        args, _ = _parser().parse_known_args(argv)
    except (UsageError, SystemExit):
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


def simulate_mesh_main(argv: list[str]) -> int:
    """The mesh mode of nnx-run (errors propagate to nnx.cli.run_tool); every output
    file (report, trace, plot, output arrays) is written after the run, all or none."""
    from nnx.sim.mesh_plot import plot_mesh
    from nnx.sim.mesh_simulator import MeshSimulator
    from nnx.sim.report import build_mesh_report, report_json
    from nnx.sim.trace import build_mesh_trace, trace_json

    args = _parser().parse_args(argv)
    inputs = load_inputs(args.input)
    program = read_mesh_program(args.program)
    target = resolve_target(args.target, program)
    if args.stream is not None and args.stream < 1:
        raise UsageError(f"--stream must be at least 1, got {args.stream}")
    if args.stream_depth < 1:
        raise UsageError(f"--stream-depth must be at least 1, got {args.stream_depth}")
    result = MeshSimulator(program, target, record_events=bool(args.trace)).run(
        inputs, stream=args.stream, depth=args.stream_depth)
    texts: dict[str, str] = {}
    if args.report:
        texts[args.report] = report_json(build_mesh_report(result, target, args.samples))
    if args.trace:
        texts[args.trace] = trace_json(build_mesh_trace(result, target))
    with files_atomically(texts, [args.plot] if args.plot else []) as plot_tmp:
        if args.plot:
            mesh, cyc = target.mesh, max(result.cycles, 1)
            plot_mesh(plot_tmp[0], mesh.width, mesh.height,
                      {c: max(st.unit_busy.values(), default=0) / cyc for c, st in result.cores.items()},
                      {k: v / cyc for k, v in result.link_cycles.items()})
        if args.output_dir:
            write_outputs(args.output_dir, result.outputs)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_tool("nnx-run", simulate_mesh_main, argv)


if __name__ == "__main__":
    sys.exit(main())
