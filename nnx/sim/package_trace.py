"""Chrome/Perfetto trace of a package run (`nnx-run prog.s --trace T.json` on a
program package; docs/subgraph-split-fuse.md, "Program packages").

A process "package" with three tracks on the package's time line: `programs` (one
event per program), `host link` (its weight load, inputs read back and outputs
parked, with bytes and tensor names) and `mesh` (its mesh run). Below it, the mesh
trace of every program (nnx/sim/trace.py `build_mesh_trace`: a process per core, a
track per unit, the NoC links), shifted to where the program's mesh run starts; a
core keeps one process across programs. Timestamps are microseconds at the target
clock.
"""

from __future__ import annotations

from typing import Any

from nnx.sim.trace import build_mesh_trace

PACKAGE_PID = 1
_TRACKS = {"programs": 1, "host link": 2, "mesh": 3}  # host steps go on the host link
_LANE = {"weight_load": "host link", "host_in": "host link", "mesh": "mesh", "host_out": "host link"}


def _part_args(run, part: str) -> dict[str, Any]:
    if part == "weight_load":
        return {"bytes": run.weight_load_bytes}
    if part == "host_in":
        return {"bytes": run.host_in_bytes, "tensors": run.inputs}
    if part == "host_out":
        return {"bytes": run.host_out_bytes, "tensors": run.outputs}
    return {}


def build_package_trace(result, target) -> dict[str, Any]:
    """The trace of a `PackageResult` (run with `keep_runs=True` for the per-core
    tracks; without them only the package process is drawn)."""
    us = 1e6 / target.clock_hz
    ev: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PACKAGE_PID, "tid": 0, "args": {"name": "package"}},
        {"name": "process_sort_index", "ph": "M", "pid": PACKAGE_PID, "tid": 0, "args": {"sort_index": 0}},
    ]
    for name, tid in _TRACKS.items():
        ev.append({"name": "thread_name", "ph": "M", "pid": PACKAGE_PID, "tid": tid, "args": {"name": name}})
        ev.append({"name": "thread_sort_index", "ph": "M", "pid": PACKAGE_PID, "tid": tid,
                   "args": {"sort_index": tid}})
    for k, run in enumerate(result.runs):
        ev.append({"name": f"program {k}", "cat": "program", "ph": "X", "pid": PACKAGE_PID,
                   "tid": _TRACKS["programs"], "ts": run.start_cycle * us, "dur": run.cycles * us,
                   "args": {"program": run.program, "start_cycle": run.start_cycle, "cycles": run.cycles}})
        for part, s, e in run.intervals():
            ev.append({"name": part.replace("_", " "), "cat": part, "ph": "X", "pid": PACKAGE_PID,
                       "tid": _TRACKS[_LANE[part]], "ts": s * us, "dur": (e - s) * us,
                       "args": {"program": k, "start_cycle": s, "cycles": e - s, **_part_args(run, part)}})
    for k, h in enumerate(getattr(result, "host_runs", ())):
        ev.append({"name": f"host step {k}", "cat": "host_step", "ph": "X", "pid": PACKAGE_PID,
                   "tid": _TRACKS["host link"], "ts": h.start_cycle * us, "dur": h.cycles * us,
                   "args": {"step": h.step, "start_cycle": h.start_cycle, "cycles": h.cycles,
                            "bytes_read": h.bytes_read, "bytes_written": h.bytes_written,
                            "inputs": h.inputs, "outputs": h.outputs}})
    pids: dict[str, int] = {}  # process name ("core N", "NoC") -> pid across programs
    for run, mesh_run in zip(result.runs, result.mesh_runs):
        shift = next((s for part, s, _ in run.intervals() if part == "mesh"), run.start_cycle) * us
        sub = build_mesh_trace(mesh_run, target)["traceEvents"]
        local = {e["pid"]: e["args"]["name"] for e in sub if e["name"] == "process_name"}
        earlier = set(pids)
        for e in sub:
            name = local.get(e["pid"], str(e["pid"]))
            pid = pids.setdefault(name, PACKAGE_PID + 1 + len(pids))
            if e["ph"] == "M":
                if name not in earlier:  # a process's metadata once
                    ev.append(dict(e, pid=pid))
            else:
                ev.append(dict(e, pid=pid, ts=e["ts"] + shift))
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"target": target.name, "cycles": result.cycles, "programs": len(result.runs)}}
