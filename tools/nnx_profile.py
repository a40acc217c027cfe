"""nnx-profile: device memory and time of a graph on a target, without running it.

    nnx-profile IN.mlir [--target T] --report R.json [--plot mem.png|mem.svg]
                [--trace trace.json] [--baseline BEFORE.mlir] [--function NAME]
                [--memory-rules torch|reuse|none|RULES]

Runs the graph-level timeline (nnx/memory_timeline.py; docs/tensor-timing-and-swapping.md,
"The device-memory model") over the function's ops in block order on the target's
units and host link, with the memory-accounting rules of nnx/memory_rules.py
(`--memory-rules`, default `torch`: calibrated against PyTorch; `none`: every SSA
value its own buffer until its last reader), and writes:

* R.json: `peak_device_bytes`, `device_memory_bytes`, `fits` (the peak within the
  device memory), `cycles`, `seconds`, `link_busy_cycles`, `resident_bytes`,
  `peak_time_cycles`, `peak_op` (index, name, location), counts of swap/compress
  ops, `memory_rules` (the rules applied); with `--baseline`, the same for BEFORE.mlir under `baseline` and the ratios
  `peak_ratio` and `slowdown`;
* the plot: device memory over time (both curves with `--baseline`), the device
  capacity as a red line (nnx/memory_plot.py); PNG or SVG by the suffix;
* the trace: Perfetto/Chrome JSON, one track per unit plus a `device memory` counter.

A graph that does not fit is a report (`fits: false`), not an error. Mistakes get one
line `nnx-profile: error: ...` and exit 1; nothing is written unless every output
succeeds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from nnx.cli import ArgumentParser, UsageError, run_tool

PROG = "nnx-profile"
_Fail = UsageError  # a user mistake: one line, exit 1 (nnx/cli.py)


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description="Device memory over time and cycles of a graph on a target.")
    p.add_argument("input", help="graph-dialect .mlir file")
    p.add_argument("--target", default="", help="target TOML (default: the embedded default)")
    p.add_argument("--report", required=True, help="write the JSON report here")
    p.add_argument("--plot", help="write memory over time here (.png or .svg)")
    p.add_argument("--trace", help="write a Perfetto/Chrome trace JSON here")
    p.add_argument("--baseline", help="the graph before swap-insert: second curve and ratios")
    p.add_argument("--function", help="function to profile (default: @main or the only one)")
    p.add_argument("--memory-rules", default="torch",
                   help="accounting rules: torch (default), reuse, none, or a preset then +/-rule names, "
                        "e.g. torch,-held_outputs (nnx/memory_rules.py)")
    return p


def _load(path: str, function: str | None):
    from xdsl.utils.exceptions import VerifyException

    from nnx.interp.interpreter import InterpError, find_function
    from nnx.ir_io import UserError, read_module

    try:
        module = read_module(path)
    except UserError as e:
        raise _Fail(str(e).strip().splitlines()[0]) from None
    try:
        module.verify()
    except VerifyException as e:
        raise _Fail(f"{path}: invalid IR: {(str(e) or 'verification failed').splitlines()[0]}") from None
    try:
        return find_function(module, function)
    except InterpError as e:
        raise _Fail(f"{path}: {e}") from None


def profile(func, target, rules=None) -> tuple[dict[str, Any], Any, Any]:
    """(report fields, timeline, block timeline data) of one function under the
    memory-accounting `rules` (default: nnx.memory_rules.DEFAULT)."""
    from nnx.dialects.graph_memory import CompressOp, SwapInOp, SwapOutOp
    from nnx.diagnostics import op_location
    from nnx.graph_costs import block_timeline
    from nnx.memory_rules import DEFAULT, RULE_NAMES
    from nnx.memory_timeline import simulate

    rules = DEFAULT if rules is None else rules
    bt = block_timeline(func.body.block, target, rules)
    tl = simulate(bt.ops, bt.values, bt.units)
    peak_op = None
    if tl.peak_op >= 0:
        op = bt.op_list[tl.peak_op]
        loc = op_location(op)
        peak_op = {"index": tl.peak_op, "name": op.name,
                   "location": f"{loc[0]}:{loc[1]}:{loc[2]}" if loc else None}
    count = lambda cls: sum(isinstance(o, cls) for o in bt.op_list)  # noqa: E731
    cap = target.device.memory_bytes
    rep = {
        "function": func.sym_name.data,
        "target": target.name,
        "device_memory_bytes": cap,
        "peak_device_bytes": tl.peak_bytes,
        "fits": tl.peak_bytes <= cap,
        "cycles": tl.cycles,
        "seconds": target.seconds(tl.cycles),
        "link_busy_cycles": tl.link_busy_cycles,
        "resident_bytes": tl.resident_bytes,
        "peak_time_cycles": tl.peak_time,
        "peak_op": peak_op,
        "ops": len(bt.ops),
        "swap_out_ops": count(SwapOutOp),
        "swap_in_ops": count(SwapInOp),
        "compress_ops": count(CompressOp),
        "memory_rules": [n for n in RULE_NAMES if getattr(rules, n)],
    }
    return rep, tl, bt


def trace_json(bt, tl, clock_hz: int) -> bytes:
    """Perfetto/Chrome trace: one complete event per op on its unit's track, and a
    `device memory` counter track (bytes)."""
    us = 1e6 / clock_hz
    tids: dict[str, int] = {}
    ev: list[dict[str, Any]] = []
    for i, op in enumerate(bt.ops):
        if not op.unit:
            continue
        tid = tids.setdefault(op.unit, len(tids) + 1)
        ev.append({"name": op.name, "ph": "X", "pid": 1, "tid": tid, "ts": tl.start[i] * us,
                   "dur": op.cycles * us, "args": {"op": i}})
    for name, tid in tids.items():
        ev.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}})
    for t, b in tl.curve:
        ev.append({"name": "device memory", "ph": "C", "pid": 1, "ts": t * us, "args": {"bytes": b}})
    return json.dumps({"traceEvents": ev, "displayTimeUnit": "ms"}).encode()


def _run(argv: list[str]) -> int:
    from nnx.atomic_file import write_files_atomically
    from nnx.figures import figure_bytes, figure_format
    from nnx.memory_plot import memory_figure
    from nnx.target import load_target

    args = build_parser().parse_args(argv)
    target = load_target(args.target or None)
    if args.plot:
        figure_format(args.plot)
    from nnx.memory_rules import parse_rules

    try:
        rules = parse_rules(args.memory_rules)
    except ValueError as e:
        raise _Fail(f"--memory-rules: {e}") from None
    func = _load(args.input, args.function)
    rep, tl, bt = profile(func, target, rules)
    curves, names = [tl.curve], [args.input]
    if args.baseline:
        base, btl, _ = profile(_load(args.baseline, args.function), target, rules)
        rep["baseline"] = base
        rep["peak_ratio"] = rep["peak_device_bytes"] / max(base["peak_device_bytes"], 1)
        rep["slowdown"] = rep["cycles"] / max(base["cycles"], 1)
        curves, names = [btl.curve, tl.curve], [args.baseline, args.input]
    outputs: dict[str, bytes] = {args.report: (json.dumps(rep, indent=2) + "\n").encode()}
    if args.plot:
        title = f"{os.path.basename(args.input)} on {target.name}: device memory over time"
        fig = memory_figure(curves, [os.path.basename(n) for n in names], target.device.memory_bytes,
                            target.clock_hz, title)
        outputs[args.plot] = figure_bytes(fig, args.plot)
    if args.trace:
        outputs[args.trace] = trace_json(bt, tl, target.clock_hz)
    write_files_atomically(outputs)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_tool(PROG, _run, argv)


if __name__ == "__main__":
    sys.exit(main())
