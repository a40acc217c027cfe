"""Core utilisation over time from a mesh run's busy intervals (docs/mesh.md, "Report").

Every core keeps, per unit, its busy intervals `[start, end)` (`CoreStats.busy_spans`,
sorted and disjoint). The time line `[0, cycles)` is cut into `samples` equal bins;
a core's utilisation in a bin is the largest fraction of the bin that one of its
units is busy (the per-bin version of the report's per-core `utilisation`, its
busiest unit's busy cycles / cycles). Pure functions over plain data.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np


def busy_until(spans: Sequence[tuple[int, int]], times: np.ndarray) -> np.ndarray:
    """Busy cycles of sorted disjoint `spans` before each of `times`."""
    if not spans:
        return np.zeros(len(times))
    arr = np.asarray(spans, dtype=np.float64)
    starts, lens = arr[:, 0], arr[:, 1] - arr[:, 0]
    before = np.concatenate([[0.0], np.cumsum(lens)])
    i = np.searchsorted(starts, times, side="right") - 1
    inside = np.clip(times - starts[np.maximum(i, 0)], 0.0, lens[np.maximum(i, 0)])
    return np.where(i >= 0, before[np.maximum(i, 0)] + inside, 0.0)


def utilisation_over_time(busy_spans: Mapping[int, Mapping[str, Sequence[tuple[int, int]]]],
                          cycles: int, samples: int = 200) -> dict:
    """`{"cycles": bin starts, "bin_cycles": w, "cores": {core: [utilisation per bin]},
    "mean": [mean over the cores per bin]}` for per-core, per-unit busy spans."""
    samples = max(1, min(int(samples), max(int(cycles), 1)))
    edges = np.linspace(0.0, float(max(cycles, 1)), samples + 1)
    width = np.diff(edges)
    per_core: dict[str, list[float]] = {}
    rows = []
    for c, units in sorted(busy_spans.items()):
        u = np.zeros(samples)
        for spans in units.values():
            u = np.maximum(u, np.diff(busy_until(spans, edges)) / width)
        rows.append(u)
        per_core[str(c)] = [round(float(v), 4) for v in u]
    mean = np.mean(rows, axis=0) if rows else np.zeros(samples)
    return {"cycles": [round(float(e), 1) for e in edges[:-1]], "bin_cycles": round(float(width[0]), 3),
            "cores": per_core, "mean": [round(float(v), 4) for v in mean]}
