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


def build_mesh_trace(result: Any, target: Target) -> dict[str, Any]:
    """The trace of a mesh run: one process per core ("core N") with one track per
    unit (the ICU track shows the core's off-chip load and its instruction fetch) and
    an "inference" track (one event per inference of a stream, from the core's begin
    to its end of it), and a process "NoC" with one track per used link ("A->B")
    showing when messages hold it."""
    us = 1e6 / target.clock_hz
    ev: list[dict[str, Any]] = []
    for c, st in sorted(result.cores.items()):
        pid = c + 1
        tracks = ["ICU"] + list(st.unit_busy) + ["inference"]
        tid = {u: i + 1 for i, u in enumerate(tracks)}
        ev.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": f"core {c}"}})
        ev.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        for u in tracks:
            ev.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid[u], "args": {"name": u}})
        if st.start:
            ev.append({"name": "load", "cat": "offchip", "ph": "X", "pid": pid, "tid": tid["ICU"], "ts": 0.0,
                       "dur": st.start * us, "args": {"cycles": st.start}})
        ev.append({"name": "fetch", "cat": "ICU", "ph": "X", "pid": pid, "tid": tid["ICU"], "ts": st.start * us,
                   "dur": (st.fetch_end - st.start) * us, "args": {"cycles": st.fetch_end - st.start}})
        for e in st.events:
            ev.append({
                "name": e.name, "cat": e.unit[:3], "ph": "X", "pid": pid, "tid": tid[e.unit],
                "ts": e.start * us, "dur": (e.end - e.start) * us,
                "args": {"line": e.line, "start_cycle": e.start, "cycles": e.end - e.start},
            })
        for k, (a, b) in enumerate(st.inferences):
            ev.append({"name": f"inference {k}", "cat": "inference", "ph": "X", "pid": pid,
                       "tid": tid["inference"], "ts": a * us, "dur": (b - a) * us,
                       "args": {"inference": k, "start_cycle": a, "cycles": b - a}})
    noc_pid = len(result.cores) and max(result.cores) + 2
    if result.link_busy:
        ev.append({"name": "process_name", "ph": "M", "pid": noc_pid, "tid": 0, "args": {"name": "NoC"}})
        ev.append({"name": "process_sort_index", "ph": "M", "pid": noc_pid, "tid": 0, "args": {"sort_index": noc_pid}})
    for i, ((a, b), spans) in enumerate(sorted(result.link_busy.items())):
        ev.append({"name": "thread_name", "ph": "M", "pid": noc_pid, "tid": i + 1, "args": {"name": f"{a}->{b}"}})
        for s, e in spans:
            ev.append({"name": "message", "cat": "NoC", "ph": "X", "pid": noc_pid, "tid": i + 1,
                       "ts": s * us, "dur": (e - s) * us, "args": {"start_cycle": s, "cycles": e - s}})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"target": target.name, "cycles": result.cycles,
                          "noc_bytes": result.noc_bytes, "noc_byte_hops": result.noc_byte_hops}}
