"""The run report (REPORT.json): cycles, per-unit work, bytes, cache occupancy, MACs.

Top-level keys:

* `cycles`            total cycles (latest end time over all units and the fetch)
* `seconds`           cycles / target clock
* `target`            target name
* `instructions`      instructions executed
* `units`             per unit (`ICU` = instruction fetch, then DAU<i>, MPU<i>, VPU<i>,
                      MAP<i>): `busy_cycles`, `utilisation` (busy / cycles),
                      `instructions`
* `bytes_moved`       bytes moved by the DMA (loads + stores + moves + gathers)
* `dma`               the same split into `load`, `store`, `move`
* `peak_cache_bytes`  peak live bytes per cache (`neuron`, `weight`, `output`) and
                      `total` (the peak of the sum, not the sum of the peaks)
* `macs`              MACs the MPUs executed
* `macs_skipped`      MACs the mapping unit let the MPUs skip (dense - executed)
* `memory_over_time`  `cycles`: sample times; per cache and `total`: live bytes then
"""

from __future__ import annotations

import json
from typing import Any

from nnx.sim.memory import occupancy_profile
from nnx.sim.simulator import RunResult
from nnx.target import SPACES, Target


def build_report(result: RunResult, target: Target, samples: int = 200) -> dict[str, Any]:
    total = max(result.cycles, 1)
    units: dict[str, Any] = {
        "ICU": {
            "busy_cycles": result.fetch_cycles,
            "utilisation": round(result.fetch_cycles / total, 6),
            "instructions": sum(result.unit_instructions.values()),
        }
    }
    for u in target.unit_names():
        b = result.unit_busy.get(u, 0)
        units[u] = {
            "busy_cycles": int(b),
            "utilisation": round(b / total, 6),
            "instructions": int(result.unit_instructions.get(u, 0)),
        }
    peaks, profile = occupancy_profile(
        result.access_log, {sp: (n, target.cache(sp).bytes) for sp, n in SPACES.items()}, samples
    )
    return {
        "target": target.name,
        "cycles": int(result.cycles),
        "seconds": result.cycles / target.clock_hz,
        "instructions": sum(result.unit_instructions.values()),
        "units": units,
        "bytes_moved": int(sum(result.bytes_moved.values())),
        "dma": {k: int(v) for k, v in result.bytes_moved.items()},
        "peak_cache_bytes": peaks,
        "macs": int(result.macs),
        "macs_skipped": int(result.macs_skipped),
        "memory_over_time": profile,
    }


def report_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=1) + "\n"
