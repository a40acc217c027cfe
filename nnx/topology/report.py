"""REPORT.json of nnx-map (docs/neuron-mapping.md, section 4) and small I/O helpers
shared by the tools."""

from __future__ import annotations

import json
import resource
import sys
import time

import numpy as np

from nnx.atomic_file import atomic_open


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (Linux ru_maxrss is in KiB)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def save_npy(path: str, arr: np.ndarray) -> None:
    """Write ``arr`` as .npy to ``path``, whole or not at all."""
    with atomic_open(path, "wb") as f:
        np.save(f, arr)


def save_json(path: str, obj: dict) -> None:
    """Write ``obj`` as indented JSON to ``path``, whole or not at all."""
    with atomic_open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def build_report(*, neurons: int, synapses: int, groups: int, evaluation: dict,
                 times: dict, stats: dict, mesh: tuple[int, int], seed: int) -> dict:
    return {
        "neurons": int(neurons),
        "synapses": int(synapses),
        "groups": int(groups),
        "mesh": f"{mesh[0]}x{mesh[1]}",
        "seed": int(seed),
        "cores_used": evaluation["cores_used"],
        "edge_cut": evaluation["edge_cut"],
        "edge_cut_fraction": evaluation["edge_cut_fraction"],
        "total_weight": evaluation["total_weight"],
        "hop_traffic": evaluation["hop_traffic"],
        "max_core_load": evaluation["max_core_load"],
        "capacity": evaluation["capacity"],
        "max_load_vs_capacity": evaluation["max_core_load"] / max(1, evaluation["capacity"]),
        "wall_seconds": {k: round(v, 4) for k, v in times.items()},
        "peak_rss_bytes": peak_rss_bytes(),
        "stats": stats,
    }


class Progress:
    """One-line progress bar on stderr, silent when stderr is not a terminal."""

    def __init__(self, enabled: bool | None = None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.phase = None
        self.t0 = time.perf_counter()
        self.last = 0.0

    def __call__(self, phase: str, done: float, total: float) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if phase == self.phase and done < total and now - self.last < 0.1:
            return
        self.last = now
        frac = 0.0 if total <= 0 else min(1.0, done / total)
        bar = "#" * int(frac * 30)
        sys.stderr.write(f"\r{phase:>10} [{bar:<30}] {frac * 100:5.1f}% {now - self.t0:7.1f}s")
        if frac >= 1.0:
            sys.stderr.write("\n")
        sys.stderr.flush()
        self.phase = phase
