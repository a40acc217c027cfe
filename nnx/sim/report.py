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
from nnx.sim.utilisation import utilisation_over_time
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


def mesh_macs_per_cycle(target: Target) -> int:
    """The MACs every MPU of every core of the mesh can do in one cycle."""
    mpu = target.unit("MPU")
    return target.mesh.cores * mpu.count * mpu.throughput


def build_mesh_report(result: Any, target: Target, samples: int = 200) -> dict[str, Any]:
    """The report of a mesh run (`nnx-run --report` on a mesh program; every field in
    docs/mesh.md, "Report"): `cycles`, `weight_load_cycles` (every core's weights are
    in), the stream's `inferences`, `latency_cycles`, `inference_latency_cycles`,
    `cycles_per_inference` and `mac_utilization`, `offchip` bytes and cycles,
    `noc_bytes`, `noc_byte_hops`, `noc_messages`, per core its start/end cycle, its
    inferences' (begin, end) cycles, `utilisation` (busiest unit's busy cycles /
    cycles) and per unit `busy_cycles`, `utilisation`, `instructions`, per directed
    link (`"a->b"`) its `bytes`, `busy_cycles` and `utilisation`, and
    `utilisation_over_time` (nnx/sim/utilisation.py)."""
    total = max(result.cycles, 1)
    cores: dict[str, Any] = {}
    for c, st in sorted(result.cores.items()):
        units = {
            u: {"busy_cycles": int(b), "utilisation": round(b / total, 6),
                "instructions": int(st.unit_instructions.get(u, 0))}
            for u, b in st.unit_busy.items()
        }
        cores[str(c)] = {
            "start_cycle": int(st.start),
            "end_cycle": int(st.end),
            "inferences": [[int(a), int(b)] for a, b in st.inferences],
            "utilisation": round(max(st.unit_busy.values(), default=0) / total, 6),
            "units": units,
        }
    links = {
        f"{a}->{b}": {"bytes": int(nb), "busy_cycles": int(result.link_cycles.get((a, b), 0)),
                      "utilisation": round(result.link_cycles.get((a, b), 0) / total, 6)}
        for (a, b), nb in sorted(result.link_bytes.items())
    }
    mesh = target.mesh
    peak = mesh_macs_per_cycle(target)
    per_inf = result.cycles_per_inference
    return {
        "target": target.name,
        "mesh": f"{mesh.width}x{mesh.height}",
        "cycles": int(result.cycles),
        "seconds": result.cycles / target.clock_hz,
        "instructions": sum(sum(st.unit_instructions.values()) for st in result.cores.values()),
        "weight_load_cycles": int(result.load_cycles),
        "inferences": int(result.inferences),
        "latency_cycles": int(result.latency_cycles),
        "inference_latency_cycles": [int(v) for v in result.latencies],
        "cycles_per_inference": round(float(per_inf), 3),
        "mesh_macs_per_cycle": int(peak),
        "mac_utilization": round(result.macs / result.inferences / max(per_inf * peak, 1), 6),
        "offchip": {
            "weight_bytes": int(result.offchip_bytes["weights"]),
            "input_bytes": int(result.offchip_bytes["inputs"]),
            "output_bytes": int(result.offchip_bytes["outputs"]),
            "load_cycles": int(result.load_cycles),
            "store_end_cycle": int(result.store_cycles),
        },
        "noc_bytes": int(result.noc_bytes),
        "noc_byte_hops": int(result.noc_byte_hops),
        "noc_messages": int(result.noc_messages),
        "bytes_moved": int(sum(result.bytes_moved.values())),
        "macs": int(result.macs),
        "macs_skipped": int(result.macs_skipped),
        "cores": cores,
        "links": links,
        "utilisation_over_time": utilisation_over_time(
            {c: st.busy_spans for c, st in result.cores.items()}, result.cycles, samples),
    }
