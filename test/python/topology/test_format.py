"""Topology file format (docs/neuron-mapping.md, section 3.1): varints, round trips, hostile files."""

import json
import resource
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nnx.topology import format as F
from nnx.topology.graph import from_edges


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), max_size=50))
def test_varint_roundtrip(values):
    data = F.varint_encode(values)
    assert F.varint_decode(data) == values
    # the high bit marks "more bytes follow": only the last byte of each is < 0x80
    assert sum(b < 0x80 for b in data) == len(values)


def test_varint_known_bytes():
    assert F.varint_encode([0, 1, 127, 128, 300]) == bytes([0, 1, 127, 0x80, 1, 0xAC, 2])


def _small(seed=0, n=300, m=2000):
    rng = np.random.default_rng(seed)
    pre = rng.integers(0, n, m)
    post = rng.integers(0, n, m)
    w = rng.random(m).astype(np.float32)
    size = rng.integers(1, 4, n)
    return pre, post, w, size, n


@pytest.mark.parametrize("vpm", [1, 7, 65536])
def test_synapse_roundtrip(tmp_path, vpm):
    pre, post, w, size, n = _small()
    p = str(tmp_path / "t.zip")
    F.write_synapses(p, pre, post, w, size, n=n, vertices_per_member=vpm)
    pre2, post2, w2, size2 = F.read_synapses(p)
    a = sorted(zip(pre.tolist(), post.tolist(), w.tolist()))
    b = sorted(zip(pre2.tolist(), post2.tolist(), w2.tolist()))
    assert a == b
    assert (size2 == size).all()
    g = from_edges(pre, post, w, size, n=n)
    g2 = F.read_graph(p)
    assert g2.n == g.n and g2.nnz == g.nnz
    assert abs(g2.total_edge_weight() - g.total_edge_weight()) < 1e-3
    if vpm == 1:
        with zipfile.ZipFile(p) as zf:
            assert len(zf.namelist()) == n + 1  # the original's one member per vertex


def test_integer_weights_use_int_encoding(tmp_path):
    p = str(tmp_path / "t.zip")
    F.write_synapses(p, [0, 1], [1, 2], [3.0, 5.0])
    assert F.info(p)["weight_encoding"] == "int"
    assert F.info(p)["total_edge_weight"] == 8.0


def test_intermediate_graph_roundtrip(tmp_path):
    pre, post, w, size, n = _small(1)
    g = from_edges(pre, post, w, size, n=n)
    p = str(tmp_path / "g.zip")
    F.write_graph(p, g)
    g2 = F.read_graph(p)
    assert g2.nnz == g.nnz and (g2.vsize == g.vsize).all()


def _rewrite(src, dst, fn):
    with zipfile.ZipFile(src) as zi, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zo:
        for name in zi.namelist():
            out = fn(name, zi.read(name))
            if out is not None:
                zo.writestr(*out) if isinstance(out, tuple) else zo.writestr(name, out)


def _expect_error(path, match):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(F.TopologyFormatError, match=match):
        F.read_graph(str(path))
    # bounded memory: rejecting a hostile file must not allocate its claims
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB


def test_truncated_member(tmp_path):
    pre, post, w, size, n = _small()
    good = str(tmp_path / "g.zip")
    F.write_synapses(good, pre, post, w, size, n=n)
    bad = tmp_path / "b.zip"
    _rewrite(good, bad, lambda nm, d: d if nm == "topology.json" else d[: len(d) // 2])
    _expect_error(bad, "truncated|vertex records|varint")


def test_truncated_archive(tmp_path):
    pre, post, w, size, n = _small()
    good = tmp_path / "g.zip"
    F.write_synapses(str(good), pre, post, w, size, n=n)
    bad = tmp_path / "b.zip"
    bad.write_bytes(good.read_bytes()[:-200])
    _expect_error(bad, "not a topology zip")


def test_absurd_counts(tmp_path):
    pre, post, w, size, n = _small()
    good = str(tmp_path / "g.zip")
    F.write_synapses(good, pre, post, w, size, n=n)
    bad = tmp_path / "b.zip"

    def fn(nm, d):
        if nm == "topology.json":
            h = json.loads(d)
            h["records"] = 10**15
            return json.dumps(h)
        return d

    _rewrite(good, bad, fn)
    _expect_error(bad, "exceed what")


def test_absurd_edge_count_in_record(tmp_path):
    bad = tmp_path / "b.zip"
    body = F.varint_encode([0, 1, 1, 2**40, 1, 0, 1, 1])
    with zipfile.ZipFile(bad, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("topology.json", json.dumps({
            "format": "nnx-topology", "version": 1, "vertices": 1, "records": 1,
            "synapses": 0, "weight_encoding": "int", "members": 1}))
        zf.writestr("v/00000000", body)
    _expect_error(bad, "edge count exceeds")


def test_zip_bomb(tmp_path):
    bad = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bad, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("topology.json", json.dumps({
            "format": "nnx-topology", "version": 1, "vertices": 1, "records": 0,
            "synapses": 0, "weight_encoding": "int", "members": 1}))
        zf.writestr("v/00000000", b"\x00" * (64 << 20))  # 64 MiB of zero varints
    _expect_error(bad, "vertex records out of order|more vertices")
    # and a lying central directory (declared size far beyond deflate's ratio)
    bomb2 = tmp_path / "bomb2.zip"
    with zipfile.ZipFile(bomb2, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("topology.json", json.dumps({
            "format": "nnx-topology", "version": 1, "vertices": 1, "records": 0,
            "synapses": 0, "weight_encoding": "int", "members": 1}))
        info = zipfile.ZipInfo("v/00000000")
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, b"\x00\x01\x01\x00")
    raw = bytearray(bomb2.read_bytes())
    # patch the central-directory uncompressed size of the member to 2**31
    i = raw.rfind(b"PK\x01\x02")
    raw[i + 24:i + 28] = (2**31).to_bytes(4, "little")
    bomb2.write_bytes(bytes(raw))
    _expect_error(bomb2, "zip bomb")


@pytest.mark.parametrize("name", ["../evil", "/etc/passwd", "v/0", "x/00000000"])
def test_path_tricks(tmp_path, name):
    bad = tmp_path / "b.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("topology.json", "{}")
        zf.writestr(name, b"")
    _expect_error(bad, "unexpected member")


def test_not_a_zip(tmp_path):
    bad = tmp_path / "b.zip"
    bad.write_bytes(b"hello")
    _expect_error(bad, "not a topology zip")
