"""Chrome/Perfetto Trace Event Format output (`nnx-run --trace T.json`).

One process ("nnx chip"), one thread (track) per unit -- ICU (instruction fetch),
DAU<i>, MPU<i>, VPU<i>, MAP<i> -- with one complete ('X') event per executed
instruction (name = mnemonic, args = asm line), and counter ('C') tracks of the cache
occupancy. Timestamps are microseconds at the target clock. Opens in ui.perfetto.dev
and chrome://tracing.
"""

from __future__ import annotations

import json
from typing import Any

from nnx.sim.simulator import RunResult
from nnx.target import Target


def build_trace(result: RunResult, target: Target, report: dict[str, Any] | None = None) -> dict[str, Any]:
    us = 1e6 / target.clock_hz
    tracks = ["ICU"] + target.unit_names()
    tid = {u: i + 1 for i, u in enumerate(tracks)}
    ev: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": f"nnx chip ({target.name})"}}
    ]
    for u in tracks:
        ev.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid[u], "args": {"name": u}})
        ev.append({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid[u], "args": {"sort_index": tid[u]}})
    if result.fetch_cycles:
        ev.append({"name": "fetch", "cat": "ICU", "ph": "X", "pid": 1, "tid": tid["ICU"], "ts": 0.0,
                   "dur": result.fetch_cycles * us, "args": {"cycles": result.fetch_cycles}})
    for e in result.events:
        ev.append({
            "name": e.name, "cat": e.unit[:3], "ph": "X", "pid": 1, "tid": tid[e.unit],
            "ts": e.start * us, "dur": (e.end - e.start) * us,
            "args": {"line": e.line, "start_cycle": e.start, "cycles": e.end - e.start},
        })
    if report is not None:
        prof = report.get("memory_over_time", {})
        times = prof.get("cycles", [])
        names = [k for k in prof if k not in ("cycles", "total")]
        for i, t in enumerate(times):
            ev.append({"name": "cache bytes", "ph": "C", "pid": 1, "ts": t * us,
                       "args": {n: prof[n][i] for n in names}})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"target": target.name, "cycles": result.cycles}}


def trace_json(trace: dict[str, Any]) -> str:
    return json.dumps(trace, separators=(",", ":")) + "\n"
