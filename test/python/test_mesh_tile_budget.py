"""Tile splits within the latency schedule's weight budget (nnx/mesh/latency.py,
`latency_tiles`; docs/mesh.md, "Tiles"): every band of a tiled conv holds its
channel groups' weights, so a tile split of r bands copies the layer's weights r
times. Where the copies exceed the budget, a group of tiled convs first takes fewer
bands (fewer copies, more channel groups) before going back to the split before;
the first rule (`LATENCY_TILE_BANDS = False`) only dropped whole groups."""

from __future__ import annotations

import numpy as np
import pytest

from mesh_targets import resized_mesh
from nnx.mesh import latency
from nnx.mesh.partition import const_bytes
from test_mesh_schedules import _graph, _run_mesh, _tile_cnn

pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _tiles(plan) -> dict[int, tuple[int, int]]:
    """op index -> (bands, channel groups) of the plan's tiled convs."""
    return {i: (plan.splits[i].r, plan.splits[i].c) for i, k in enumerate(plan.kinds) if k == "tile"}


def test_weight_heavy_tiles_take_fewer_bands_within_the_budget(tmp_path, monkeypatch):
    """A small ResNet-like CNN of 64 channels (1.2 MB of weights) on 4 x 4 cores of
    512 KiB: its tiled convs' weight copies exceed 0.3 of the mesh. With fewer bands
    its first block's convs stay tiled (the first rule planned them as channel splits,
    whose parts each receive the whole input); both match onnxruntime, and every
    part of those tiles receives less than its whole input. (Not faster here: 55,570
    cycles against 51,338, bench/RESULTS.md.)"""
    import onnxruntime as ort

    from nnx.mesh import compile as mesh_compile
    from nnx.mesh.compile import compile_for_mesh

    path = tmp_path / "tiles64.onnx"
    _tile_cnn(str(path), hw=24, ch=64)
    target = resized_mesh(tmp_path, 4, 4, 512 * 1024)
    feeds = {"x": np.random.default_rng(3).standard_normal((1, 3, 24, 24)).astype(np.float32)}
    ref = ort.InferenceSession(str(path)).run(["y"], feeds)[0]
    monkeypatch.setattr(mesh_compile, "LATENCY_WEIGHT_FILL", 0.3)
    from nnx.mesh.core_graph import _Producers, item_reads
    from nnx.mesh.partition import nbytes
    from nnx.mesh.stage_merge import piece_bytes

    got, comps = {}, {}
    for bands in (True, False):
        monkeypatch.setattr(latency, "LATENCY_TILE_BANDS", bands)
        comp = compile_for_mesh(_graph(path), target, "bisect", schedule="latency")
        assert comp.schedule == "latency"
        d = tmp_path / f"bands_{bands}"
        d.mkdir()
        res = _run_mesh(comp, feeds, d)
        np.testing.assert_allclose(res.outputs["y"], ref, rtol=0, atol=1e-4)
        tiles = _tiles(comp.plan)
        copies = sum(const_bytes(comp.plan.ops[i]) * (r - 1) for i, (r, _) in tiles.items())
        got[bands], comps[bands] = (tiles, copies), comp
    (new, new_copies), (old, old_copies) = got[True], got[False]
    # more convs tiled, within the same budget of copies (0.3 of the mesh, one copy of
    # every weight included)
    assert set(old) < set(new), (old, new)
    budget = 0.3 * 16 * 512 * 1024 - 1226792
    assert old_copies <= budget and new_copies <= budget, (old_copies, new_copies, budget)
    # the convs tiled only by the new rule took fewer bands than their unbounded best
    from xdsl.dialects import func

    from nnx.dialects.graph import ConstantOp
    from nnx.target import load_target

    main = mesh_compile.main_function(_graph(path))
    ops = [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
    unbounded = latency.latency_shares(ops, load_target(target)).tiles
    assert all(unbounded[i] is not None and new[i][0] < unbounded[i][0] for i in set(new) - set(old)), (new, unbounded)
    # their parts receive a band of their input, where a channel split's receive all of it
    plan = comps[True].plan
    prod = _Producers(plan)
    for i in set(new) - set(old):
        whole = nbytes(plan.ops[i].operands[0])
        for p in range(plan.splits[i].k):
            got = sum(piece_bytes(plan, pc) for pc in item_reads(plan, prod, (i, p), [])[1])
            assert got < whole, (plan.ops[i].name, p, got, whole)


def test_residual_roots_get_the_same_channel_parts(tmp_path, monkeypatch):
    """A residual add reading a conv and the relu of an earlier conv follows them
    piece by piece only when both convs are cut alike: `latency_shares` gives every
    root of a group of followers (through relus and adds) the largest of their
    channel parts; the first rule aligned the add's direct producers (the relu),
    which left the earlier conv with its own parts."""
    from xdsl.dialects import func

    from nnx.dialects.graph import AddOp, ConstantOp, ConvOp
    from nnx.mesh import compile as mesh_compile
    from nnx.target import load_target

    path = tmp_path / "tiles.onnx"
    _tile_cnn(str(path), hw=24, ch=16)
    main = mesh_compile.main_function(_graph(path))
    ops = [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
    index = {id(op): i for i, op in enumerate(ops)}
    tgt = load_target(resized_mesh(tmp_path, 4, 4, 512 * 1024))

    def root(v):  # the conv a value comes from, through relus
        while not isinstance(v.owner, ConvOp):
            v = v.owner.operands[0]
        return index[id(v.owner)]
    add = next(op for op in ops if isinstance(op, AddOp) and not all(isinstance(v.owner, ConvOp) for v in op.operands))
    roots = {root(v) for v in add.operands}
    assert len(roots) == 2
    got = {}
    for align in (True, False):
        monkeypatch.setattr(latency, "LATENCY_ALIGN_ROOTS", align)
        got[align] = {latency.latency_shares(ops, tgt).channels[r] for r in roots}
    assert len(got[True]) == 1, got
    assert len(got[False]) == 2, got
