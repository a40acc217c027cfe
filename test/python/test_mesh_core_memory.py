"""The latency schedule's fold by a live-range estimate of what a core holds with
memory reuse (nnx/mesh/core_memory.py; docs/mesh.md, "Memory reuse"): a small
DenseNet that no plan fitted on a tight mesh compiles to one program and matches
onnxruntime; the estimate follows the lowered programs' storage."""

from __future__ import annotations

import numpy as np
import pytest

import model_zoo
from mesh_targets import resized_mesh
from nnx import api
from nnx.mesh import compile as mesh_compile
from nnx.mesh.errors import MeshFitError
from nnx.sim.asm_mesh import read_mesh_program
from nnx.sim.mesh_simulator import MeshSimulator
from nnx.target import load_target

GRAPH_PASSES = "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)"

pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _graph(path):
    module = api.import_onnx(str(path), None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    return module


@pytest.fixture
def dense(tmp_path):
    """A DenseNet of two blocks of four layers at 64 x 64 (125 KB of weights; its
    block-1 concatenations up to 192 KiB) and 4 x 4 cores of 384 KiB."""
    path = tmp_path / "dense.onnx"
    model_zoo.dense_cnn(path)
    return path, resized_mesh(tmp_path, 4, 4, 384 * 1024, 8192)


def test_dense_cnn_fits_one_latency_program_by_live_ranges(dense, tmp_path, monkeypatch):
    import onnxruntime as ort

    from nnx.passes.lower_to_mesh import save_mesh_program

    path, target = dense
    comp = mesh_compile.compile_for_mesh(_graph(path), target, schedule="latency")
    assert comp.schedule == "latency"  # one program, no fallback
    assert max(sec.program.storage_bytes for sec in comp.program.cores.values()) <= 384 * 1024
    feeds = {"x": np.random.default_rng(2).standard_normal((1, 3, 64, 64)).astype(np.float32)}
    asm = str(tmp_path / "prog.s")
    save_mesh_program(comp, asm)
    got = MeshSimulator(read_mesh_program(asm), load_target(target)).run(feeds).outputs["logits"]
    ref = ort.InferenceSession(str(path)).run(["logits"], feeds)[0]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-4)
    # the first rule (a core's load: its parts' planned bytes, every value for the
    # whole program) fits no plan, and `stages` none either
    monkeypatch.setattr(mesh_compile, "LATENCY_FOLD_MEMORY", "planned")
    monkeypatch.setattr(mesh_compile, "LATENCY_WEIGHT_FILL", None)
    with pytest.raises(MeshFitError):
        mesh_compile.compile_for_mesh(_graph(path), target, schedule="latency")


def test_live_range_estimate_follows_the_lowered_storage(dense):
    """Per core, the estimate (weights, graph inputs and sent pieces for the whole
    program, plus the most activation bytes live at once) against the storage of
    its program lowered with memory reuse as far as it goes."""
    from xdsl.dialects import func

    from nnx.dialects.graph import ConstantOp
    from nnx.mesh.core_graph import piece_name
    from nnx.mesh.core_memory import part_memories, stage_memories
    from nnx.mesh.latency import fold, latency_shares
    from nnx.mesh.partition import plan_partition

    path, target = dense
    tgt = load_target(target)
    main = mesh_compile.main_function(_graph(path))
    ops = [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
    returned = list(main.body.block.last_op.operands)
    memory = tgt.mesh.core_memory_bytes
    plan = plan_partition(ops, 16, memory, 1.0, 0.6, returned, latency_shares(ops, tgt), windows=True)
    plan, _ = fold(plan, 4, 4, 0.6 * memory, part_memories(plan, returned))
    est = [c.total() for c in stage_memories(plan, part_memories(plan, returned))]
    ios, modules, _ = mesh_compile._stage_modules(plan, main)
    ratios = []
    for s in sorted(range(len(est)), key=lambda s: -est[s])[:4]:
        prog = mesh_compile._lower_stage(modules[s][0], tgt, target, False, 1,
                                         tuple(piece_name(pc) for pc in ios[s].recv), True)
        ratios.append(prog.program.storage_bytes / est[s])
    assert all(0.7 <= r <= 1.3 for r in ratios), ratios


def test_row_parts_capped_so_replicated_weights_fit(tmp_path):
    """Every part of a row split holds its op's weights: on a mesh of many small
    cores the small DenseNet's convs, cut into bands, replicate their weights over
    many cores; `replication_caps` cuts the row parts of the ops whose weights cost
    the most per cycle saved until the replicas fit the budget."""
    from xdsl.dialects import func

    from nnx.dialects.graph import ConstantOp
    from nnx.mesh.core_memory import replication_caps
    from nnx.mesh.latency import latency_shares
    from nnx.mesh.partition import const_bytes, plan_partition

    path = tmp_path / "dense.onnx"
    model_zoo.dense_cnn(path)
    target = resized_mesh(tmp_path, 16, 16, 256 * 1024, 8192)
    tgt = load_target(target)
    main = mesh_compile.main_function(_graph(path))
    ops = [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
    returned = list(main.body.block.last_op.operands)

    def replicated(share):
        plan = plan_partition(ops, 256, tgt.mesh.core_memory_bytes, 1.0, 0.6, returned, share, windows=True)
        return sum(plan.splits[i].k * const_bytes(op) for i, op in enumerate(ops) if plan.kinds[i] == "rows")

    shares = latency_shares(ops, tgt)
    before = replicated(shares)
    budget = before / 3
    capped = replication_caps(ops, shares, tgt, budget)
    assert capped.rows_max is not None and replicated(capped) <= budget < before
    assert replication_caps(ops, shares, tgt, 2 * before) is shares  # fits: untouched


def test_estimate_follows_reads_joined_in_place(tmp_path):
    """A tiled CNN (`test_mesh_schedules._tile_cnn`, 64 channels) on 4 x 4 cores of
    512 KiB: a channel-split conv reads a tiled value whole, its channel groups'
    row bands received straight into one buffer (chip-lower's nested in-place
    concats, docs/mesh.md "Received pieces in place"), a piece the core holds
    already copied to its place. Every core's lowered storage is within 0.85x-1.05x
    of its estimate (which counts no copy of the joined value: the lowering that
    copied the groups together came to 1.05x-1.4x of it)."""
    from xdsl.dialects import func

    from nnx.dialects.graph import ConstantOp
    from nnx.mesh.core_graph import piece_name
    from nnx.mesh.core_memory import part_memories, stage_memories
    from nnx.mesh.latency import fold, latency_shares
    from nnx.mesh.partition import plan_partition
    from nnx.mesh.tile_splits import TileSplit
    from test_mesh_schedules import _tile_cnn

    path = tmp_path / "tiles64.onnx"
    _tile_cnn(str(path), hw=24, ch=64)
    target = resized_mesh(tmp_path, 4, 4, 512 * 1024)
    tgt = load_target(target)
    main = mesh_compile.main_function(_graph(path))
    ops = [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
    returned = list(main.body.block.last_op.operands)
    memory = tgt.mesh.core_memory_bytes
    plan = plan_partition(ops, 16, memory, 1.0, 0.6, returned, latency_shares(ops, tgt, 0.3), windows=True)
    plan, _ = fold(plan, 4, 4, 0.6 * memory, part_memories(plan, returned))
    # a channel split reading a tiled value whole
    index = {id(op): i for i, op in enumerate(plan.ops)}
    assert any(plan.kinds[i] == "split" and isinstance(plan.splits.get(index.get(id(v.owner))), TileSplit)
               for i, op in enumerate(plan.ops) for v in op.operands)
    ios, modules, _ = mesh_compile._stage_modules(plan, main)
    lowered = [mesh_compile._lower_stage(modules[s][0], tgt, target, False, 1,
                                         tuple(piece_name(pc) for pc in ios[s].recv), True).program.storage_bytes
               for s in range(len(plan.stages))]
    est = [c.total() for c in stage_memories(plan, part_memories(plan, returned))]
    ratios = [low / e for low, e in zip(lowered, est)]
    assert all(0.85 <= r <= 1.05 for r in ratios), ratios
