"""The points of a sweep (docs/sweeps.md, "Points and resuming"): every combination
of model, pipeline and grid values, in file order (models outermost, then pipelines,
then the grid keys in the order the file lists them, the last varying fastest).

Each point carries everything a worker needs as plain data (it crosses process and
machine boundaries): the model, the pipeline text, the grid values, the target's
TOML text, the metrics and the mode, and its `key`: a content hash of the model
file's bytes and input shapes, the pipeline, the target's data and the mode. A
results file is resumed by key, so renaming or moving a model file keeps its rows,
while editing it (or the base target) computes its points again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import tomli_w

from .spec import ModelSpec, SweepSpec, set_dotted


@dataclass(frozen=True)
class Point:
    """One compile-and-run of a sweep."""

    index: int
    model: ModelSpec
    pipeline: str
    grid: tuple[tuple[str, Any], ...]
    target_toml: str
    metrics: tuple[str, ...]
    mode: str
    key: str


@lru_cache(maxsize=None)
def file_digest(path: str) -> str:
    """SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def point_key(model: ModelSpec, pipeline: str, target: dict[str, Any], mode: str) -> str:
    """The content hash of a point (16 hex digits of SHA-256)."""
    text = json.dumps({"model": file_digest(model.path), "input_shapes": sorted(model.input_shapes.items()),
                       "pipeline": pipeline, "target": target, "mode": mode}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def sweep_points(spec: SweepSpec) -> list[Point]:
    """Every point of `spec`, in file order (module docstring)."""
    keys = list(spec.grid)
    combos = list(itertools.product(*(spec.grid[k] for k in keys)))
    out: list[Point] = []
    for model in spec.models:
        for pipeline in spec.pipelines:
            for values in combos:
                data = spec.base
                for k, v in zip(keys, values):
                    data = set_dotted(data, k, v)
                out.append(Point(len(out), model, pipeline, tuple(zip(keys, values)), tomli_w.dumps(data),
                                 spec.metrics, spec.mode, point_key(model, pipeline, data, spec.mode)))
    return out
