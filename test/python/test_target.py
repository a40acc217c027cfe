"""Target description: the embedded default, every key checked, one-line errors."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib

import pytest

from nnx import target as T
from nnx.target import TargetError, load_target, parse_target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_FILE = os.path.join(ROOT, "targets", "default.toml")


def test_embedded_default_matches_file():
    with open(DEFAULT_FILE, encoding="utf-8") as f:
        assert f.read() == T.DEFAULT_TARGET_TOML


def test_default_loads_and_is_frozen():
    t = load_target()
    assert load_target(DEFAULT_FILE) == parse_target(T.DEFAULT_TARGET_TOML, DEFAULT_FILE)
    assert t.unit_names() == ["DAU0", "MPU0", "VPU0", "MAP0"]
    assert t.cache_bytes("N") == t.cache("neuron").bytes
    assert t.mapping.index_forms == ("direct", "stride")
    with pytest.raises(Exception):
        t.clock_hz = 5  # type: ignore[misc]


def test_timing_formulas():
    t = load_target()
    bw = t.storage.dma_bytes_per_cycle
    assert t.dma_cycles(bw * 10) == t.storage.dma_latency_cycles + t.unit("DAU").latency_cycles + 10
    mpu = t.unit("MPU")
    assert t.mpu_cycles(mpu.throughput * 3) == mpu.latency_cycles + 3
    assert t.vpu_cycles(1) == t.unit("VPU").latency_cycles + 1


def test_default_works_outside_the_checkout(tmp_path):
    # the embedded default does not read any file: run from an unrelated cwd
    code = "from nnx.target import load_target; print(load_target().name)"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "nnx-default"


def _mutate(path: list[str], value, tmp_path, delete=False):
    data = tomllib.loads(T.DEFAULT_TARGET_TOML)
    node = data
    for p in path[:-1]:
        node = node[p]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


def _toml(data) -> str:
    out = []

    def val(v):
        if isinstance(v, str):
            return f'"{v}"'
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        return str(v)

    def emit(prefix, table):
        scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
        if prefix:
            out.append(f"[{prefix}]")
        for k, v in scalars.items():
            out.append(f"{k} = {val(v)}")
        for k, v in table.items():
            if isinstance(v, dict):
                emit(f"{prefix}.{k}" if prefix else k, v)

    emit("", data)
    return "\n".join(out) + "\n"


BAD = [
    (["caches", "weight", "bytes"], -5, "key 'caches.weight.bytes': must be a positive integer"),
    (["caches", "weight", "bytes"], "big", "key 'caches.weight.bytes': must be a positive integer"),
    (["storage", "dma_bytes_per_cycle"], 0, "key 'storage.dma_bytes_per_cycle': must be a positive integer"),
    (["units", "MPU", "count"], True, "key 'units.MPU.count': must be a positive integer"),
    (["units", "TPU"], {"count": 1}, "key 'units.TPU': unknown key"),
    (["mapping", "index_forms"], ["direct", "bitmap"], "key 'mapping.index_forms'"),
    (["caches", "neuron", "bytes"], 1024, "key 'caches.neuron.bytes': 1024 bytes is smaller than one MPU tile"),
    (["tiling", "vpu_elements"], 1 << 20, "smaller than one VPU tile"),
    (["mesh", "core_memory_bytes"], 4096, "key 'mesh.core_memory_bytes'"),
    (["icache", "instruction_bytes"], 1 << 20, "key 'icache.bytes': smaller than one instruction"),
    (["target", "name"], "", "key 'target.name': must be a non-empty string"),
    (["units", "VPU", "elements_per_second"], 3, "key 'units.VPU.elements_per_second': unknown key"),
]


@pytest.mark.parametrize("path,value,expect", BAD)
def test_bad_values_name_key_and_reason(path, value, expect, tmp_path):
    f = tmp_path / "x.toml"
    f.write_text(_toml(_mutate(path, value, tmp_path)))
    with pytest.raises(TargetError) as e:
        load_target(str(f))
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{f}: ")
    assert expect in msg


@pytest.mark.parametrize(
    "path,expect",
    [
        (["units", "MPU", "macs_per_cycle"], "key 'units.MPU.macs_per_cycle': missing key"),
        (["caches", "output"], "key 'caches.output': missing key"),
        (["clock"], None),
    ],
)
def test_missing_keys(path, expect, tmp_path):
    if expect is None:
        data = tomllib.loads(T.DEFAULT_TARGET_TOML)
        data["clock"] = {"hz": 1}
        f = tmp_path / "x.toml"
        f.write_text(_toml(data))
        with pytest.raises(TargetError, match=r"key 'clock': unknown table"):
            load_target(str(f))
        return
    f = tmp_path / "x.toml"
    f.write_text(_toml(_mutate(path, None, tmp_path, delete=True)))
    with pytest.raises(TargetError) as e:
        load_target(str(f))
    assert expect in str(e.value)


def test_malformed_toml_and_missing_file(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("[target\nname = 1\n")
    with pytest.raises(TargetError, match=re.escape(str(f)) + ": malformed TOML"):
        load_target(str(f))
    with pytest.raises(TargetError, match="cannot read"):
        load_target(str(tmp_path / "nope.toml"))


def test_round_trip_of_generated_toml(tmp_path):
    f = tmp_path / "same.toml"
    f.write_text(_toml(tomllib.loads(T.DEFAULT_TARGET_TOML)))
    t = load_target(str(f))
    assert t.caches == load_target().caches and t.units == load_target().units
