"""Mesh targets for tests: the 4 x 4 test mesh (test/passes/lower-to-mesh/Inputs/
mesh4x4.toml) resized, written into a test's temporary directory."""

from __future__ import annotations

import os
import re

BASE_TARGET = os.path.join(os.path.dirname(__file__), "..", "passes", "lower-to-mesh", "Inputs", "mesh4x4.toml")


def resized_mesh(tmp_path, width: int, height: int, core_memory: int, cache_bytes: int | None = None) -> str:
    """Path of the test mesh with width x height cores of `core_memory` bytes (and,
    when given, neuron/weight/output caches of `cache_bytes`)."""
    with open(BASE_TARGET, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"(?m)^width = \d+", f"width = {width}", text)
    text = re.sub(r"(?m)^height = \d+", f"height = {height}", text)
    text = re.sub(r"(?m)^core_memory_bytes = \d+", f"core_memory_bytes = {core_memory}", text)
    if cache_bytes is not None:
        text = re.sub(r"(?m)^bytes = 32768", f"bytes = {cache_bytes}", text)
    path = tmp_path / f"mesh{width}x{height}.toml"
    path.write_text(text)
    return str(path)
