"""The `[mesh]` part of the target (nnx/target.py): optional NoC and off-chip keys with
their documented defaults, targets/mesh.toml and its embedded copy, one-line errors."""

from __future__ import annotations

import copy
import os
import tomllib

import pytest

import nnx.target as T
from nnx.target import TargetError, builtin_target_named, load_target, parse_target, target_from_dict

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MESH_FILE = os.path.join(ROOT, "targets", "mesh.toml")


def test_mesh_toml_is_the_embedded_mesh_target():
    with open(MESH_FILE, encoding="utf-8") as f:
        assert f.read() == T.MESH_TARGET_TOML
    assert load_target(MESH_FILE) == parse_target(T.MESH_TARGET_TOML, MESH_FILE)
    t = load_target("mesh")
    assert builtin_target_named("nnx-mesh") is t
    assert builtin_target_named("nnx-default") is load_target()
    assert builtin_target_named("nope") is None


def test_mesh_toml_holds_the_models_of_the_issue():
    t = load_target("mesh")
    m = t.mesh
    assert (m.width, m.height) == (16, 16)
    total = m.cores * m.core_memory_bytes
    bert2 = 150e6  # 2-layer BERT of base width
    assert total >= 3 * bert2  # weights at most a third of the core memory
    assert 94e6 / m.core_memory_bytes >= 40  # the embedding table spreads over >= 40 cores
    assert m.noc.link_bytes_per_cycle == 32 and m.noc.hop_latency_cycles == 1
    assert m.offchip.bytes_per_cycle == 256 and m.offchip.latency_cycles == 200


def test_noc_and_offchip_keys_are_optional_with_defaults():
    t = load_target()  # targets/default.toml has neither sub-table
    assert t.mesh.noc == T.NocSpec(hop_latency_cycles=1, link_bytes_per_cycle=32, routing="xy")
    # the off-chip memory defaults to one storage DMA channel
    assert t.mesh.offchip == T.OffchipSpec(t.storage.dma_bytes_per_cycle, t.storage.dma_latency_cycles)


def _with(path: list[str], value) -> dict:
    data = copy.deepcopy(tomllib.loads(T.MESH_TARGET_TOML))
    node = data
    for p in path[:-1]:
        node = node.setdefault(p, {})
    node[path[-1]] = value
    return data


BAD = [
    (["mesh", "noc", "hop_latency_cycles"], -1, "key 'mesh.noc.hop_latency_cycles': must be a non-negative integer, got -1"),
    (["mesh", "noc", "link_bytes_per_cycle"], 0, "key 'mesh.noc.link_bytes_per_cycle': must be a positive integer, got 0"),
    (["mesh", "noc", "routing"], "yx", "key 'mesh.noc.routing': must be one of ['xy'], got 'yx'"),
    (["mesh", "noc", "hops"], 3, "key 'mesh.noc.hops': unknown key (expected one of: hop_latency_cycles, link_bytes_per_cycle, routing)"),
    (["mesh", "noc"], 5, "key 'mesh.noc': must be a table"),
    (["mesh", "offchip", "bytes_per_cycle"], "fast", "key 'mesh.offchip.bytes_per_cycle': must be a positive integer, got 'fast'"),
    (["mesh", "offchip", "latency_cycles"], True, "key 'mesh.offchip.latency_cycles': must be a non-negative integer, got True"),
    (["mesh", "offchip", "channels"], 2, "key 'mesh.offchip.channels': unknown key"),
    (["mesh", "depth"], 2, "key 'mesh.depth': unknown key (expected one of: width, height, core_memory_bytes, noc, offchip)"),
    (["mesh", "width"], 0, "key 'mesh.width': must be a positive integer, got 0"),
]


@pytest.mark.parametrize("path,value,expect", BAD)
def test_bad_mesh_keys_are_one_line_errors(path, value, expect):
    with pytest.raises(TargetError) as e:
        target_from_dict(_with(path, value), "m.toml")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("m.toml: ") and expect in msg


def test_missing_mesh_key():
    data = tomllib.loads(T.MESH_TARGET_TOML)
    del data["mesh"]["core_memory_bytes"]
    with pytest.raises(TargetError, match=r"^m.toml: key 'mesh.core_memory_bytes': missing key$"):
        target_from_dict(data, "m.toml")
    del data["mesh"]
    with pytest.raises(TargetError, match=r"^m.toml: key 'mesh': missing table$"):
        target_from_dict(data, "m.toml")
