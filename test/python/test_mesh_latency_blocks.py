"""2-D splits chosen by the latency schedule's cost model (nnx/mesh/latency.py,
`latency_blocks`; docs/mesh.md, "Schedules"): a conv the partitioner would split by
output channels, every part receiving its whole input, is cut also along the input
channels it sums over where the model finds that faster, so that each part receives
1/ki of the input; the partial sums of each output piece pass along a chain. The
first rule (`LATENCY_BLOCKS = False`) keeps the output split."""

from __future__ import annotations

import numpy as np
import pytest

from nnx.mesh import latency
from test_mesh_schedules import _graph, _latency_run, _save_cnn, _weights

pytestmark = pytest.mark.blas_sensitive  # scripts/test_blas.sh reruns it under other kernels


def _wide_cnn(path, hw=16):
    """x (1 x 3 x hw x hw) -> 3 x 3 convs to 64 and 512 channels (stride 2 each) ->
    a 1 x 1 conv 512 -> 64 (its 131 KB of weights outweigh its 32 KB input: a
    channel split, whose parts each receive the whole input) -> global pool ->
    classifier."""
    from onnx import helper

    t = _weights(np.random.default_rng(5))
    inits = [t("W0", 64, 3, 3, 3), t("B0", 64), t("W1", 512, 64, 3, 3), t("B1", 512), t("W2", 64, 512, 1, 1),
             t("B2", 64), t("WF", 10, 64), t("BF", 10)]
    node = helper.make_node
    nodes = [node("Conv", ["x", "W0", "B0"], ["c0"], strides=[2, 2], pads=[1, 1, 1, 1]), node("Relu", ["c0"], ["r0"]),
             node("Conv", ["r0", "W1", "B1"], ["c1"], strides=[2, 2], pads=[1, 1, 1, 1]), node("Relu", ["c1"], ["r1"]),
             node("Conv", ["r1", "W2", "B2"], ["c2"]), node("Relu", ["c2"], ["r2"]),
             node("GlobalAveragePool", ["r2"], ["g"]), node("Flatten", ["g"], ["f"]),
             node("Gemm", ["f", "WF", "BF"], ["y"], transB=1)]
    _save_cnn(path, "wide", nodes, inits, hw)


def test_channel_split_conv_cut_in_2d_receives_part_of_its_input(tmp_path, monkeypatch):
    """The 1 x 1 conv of `_wide_cnn` on the 4 x 4 test mesh, not tiled
    (`LATENCY_TILES = False`) and cut in 2-D wherever the model finds that faster at
    all (`LATENCY_BLOCK_GAIN = 1`: at the default 0.5 a model this small stays as it
    was): with the rule it is a 2-D split (kind "block", ki > 1 input ranges) whose
    every part receives at most half its input, where the output split's parts each
    receive all of it; both plans' outputs within 1e-4 of onnxruntime."""
    import onnxruntime as ort

    from nnx.mesh.core_graph import _Producers, item_reads
    from nnx.mesh.partition import nbytes
    from nnx.mesh.stage_merge import piece_bytes

    path = tmp_path / "wide.onnx"
    _wide_cnn(str(path))
    feeds = {"x": np.random.default_rng(4).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    ref = ort.InferenceSession(str(path)).run(["y"], feeds)[0]
    kinds, received = {}, {}
    monkeypatch.setattr(latency, "LATENCY_TILES", False)
    monkeypatch.setattr(latency, "LATENCY_BLOCK_GAIN", 1.0)
    for blocks in (True, False):
        monkeypatch.setattr(latency, "LATENCY_BLOCKS", blocks)
        comp, res = _latency_run(path, feeds, tmp_path / f"blocks_{blocks}")
        assert comp.schedule == "latency"
        np.testing.assert_allclose(res.outputs["y"], ref, rtol=0, atol=1e-4)
        plan = comp.plan
        i = next(i for i, op in enumerate(plan.ops) if op.name == "graph.conv" and
                 int(op.operands[1].type.get_shape()[1]) == 512)
        kinds[blocks] = plan.kinds[i]
        prod = _Producers(plan)
        whole = nbytes(plan.ops[i].operands[0])
        parts = [it for s in plan.stages for it in s.items if it[0] == i]
        # what each part receives of the activation (not the running sums of its chain)
        received[blocks] = max(sum(piece_bytes(plan, pc) for pc in item_reads(plan, prod, it, [])[1] if pc[0] != i)
                               for it in parts) / whole
        if blocks:
            assert plan.blocks[i].ki > 1, plan.blocks[i]
    assert kinds == {True: "block", False: "split"}, kinds
    assert received[False] == pytest.approx(1.0) and received[True] <= 0.5, received


def test_part_floor_cap_gives_a_deep_model_more_parts(tmp_path, monkeypatch):
    """The part floor rises with the graph's work over the mesh
    (`LATENCY_PARTS_PER_CORE`), and every layer above it takes at least the floor;
    `LATENCY_FLOOR_MAX` caps it. With few parts per core (a floor far above the
    256-cycle base, as ResNet-50's on the full mesh), the cap gives the convs more
    parts and leaves none with fewer; without it (None) the shares are the first
    rule's."""
    _assert_more_conv_rows(*_wide_cnn_shares(tmp_path, monkeypatch, "LATENCY_FLOOR_MAX", None, 1024.0))


def _wide_cnn_shares(tmp_path, monkeypatch, rule: str, before, after, **fixed):
    """The ops of `_wide_cnn` and their latency shares (no tiles) on the test mesh,
    with few parts per core (a floor far above the 256-cycle base), the rules
    `fixed` of nnx/mesh/latency.py set, and `rule` set to `before`, then `after`."""
    from xdsl.dialects import func

    from nnx.dialects.graph import ConstantOp
    from nnx.mesh.compile import main_function
    from nnx.target import load_target
    from test_lower_to_mesh import TARGET

    path = tmp_path / "wide.onnx"
    _wide_cnn(str(path))
    main = main_function(_graph(path))
    ops = [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
    monkeypatch.setattr(latency, "LATENCY_PARTS_PER_CORE", 0.25)
    for name, value in fixed.items():
        monkeypatch.setattr(latency, name, value)
    shares = []
    for value in (before, after):
        monkeypatch.setattr(latency, rule, value)
        shares.append(latency.latency_shares(ops, load_target(TARGET), tiles=False))
    return ops, shares[0], shares[1]


def _assert_more_conv_rows(ops, old, new) -> None:
    """No op has fewer row parts in `new` than in `old`, and some conv has more."""
    assert all(b >= a for a, b in zip(old.rows, new.rows)), (old.rows, new.rows)
    convs = [i for i, op in enumerate(ops) if op.name == "graph.conv"]
    assert any(new.rows[i] > old.rows[i] for i in convs), (old.rows, new.rows)


def test_a_capped_plan_that_does_not_fit_is_planned_uncapped(tmp_path, monkeypatch):
    """A plan with the part floor capped has more parts per core; where its cores
    overflow (ResNet-18 on 8 x 8 cores of 2 MiB: 32 parts per core), compile_for_mesh
    plans the same fill and tiles uncapped before an emptier fill or `stages`.
    Every capped attempt here is made to overflow (as a core of that ResNet-18
    did): the next attempt is the uncapped one at the first fill, and its program
    matches onnxruntime."""
    import onnxruntime as ort

    from nnx.mesh import compile as mesh_compile
    from nnx.mesh.errors import MeshFitError

    path = tmp_path / "wide.onnx"
    _wide_cnn(str(path))
    feeds = {"x": np.random.default_rng(4).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    ref = ort.InferenceSession(str(path)).run(["y"], feeds)[0]
    real, calls = mesh_compile._compile_latency, []

    def capped_overflows(main, tgt, target, fill, tiles=True, floor_max=None):
        calls.append((fill, tiles, floor_max))
        if floor_max is not None:
            raise MeshFitError("memory", "a capped core", 2, 1, None, lowered=True)
        return real(main, tgt, target, fill, tiles, floor_max)

    monkeypatch.setattr(latency, "LATENCY_FLOOR_MAX", 3600.0)
    monkeypatch.setattr(mesh_compile, "_compile_latency", capped_overflows)
    comp, res = _latency_run(path, feeds, tmp_path / "run")
    assert comp.schedule == "latency"
    first = mesh_compile.LATENCY_FILLS[0]
    assert calls[:2] == [(first, latency.LATENCY_TILES, 3600.0), (first, latency.LATENCY_TILES, None)], calls
    np.testing.assert_allclose(res.outputs["y"], ref, rtol=0, atol=1e-4)


def test_layer_floor_is_the_median_matrix_op_over_its_parts(monkeypatch):
    """`layer_floor`: the median one-core cycles of the matrix ops over
    LATENCY_LAYER_PARTS, never under the 256-cycle base floor; no cap when the rule
    is off or the graph has no matrix op."""
    monkeypatch.setattr(latency, "LATENCY_LAYER_PARTS", 16.0)
    assert latency.layer_floor([64_000.0, 16_000.0, 32_000.0]) == pytest.approx(2_000.0)
    assert latency.layer_floor([1_000.0, 3_000.0]) == pytest.approx(float(latency.LATENCY_PART_CYCLES))
    assert latency.layer_floor([]) == float("inf")
    monkeypatch.setattr(latency, "LATENCY_LAYER_PARTS", None)
    assert latency.layer_floor([64_000.0]) == float("inf")


def test_layer_floor_cuts_small_layers_and_computes_the_same(tmp_path, monkeypatch):
    """A floor far above the model's layers (few parts per core, no fixed cap
    binding) leaves its convs on few cores; the layers' cap (`LATENCY_LAYER_PARTS`)
    gives them more parts, none fewer, and the program it compiles to still matches
    onnxruntime within 1e-4."""
    import onnxruntime as ort

    _assert_more_conv_rows(*_wide_cnn_shares(tmp_path, monkeypatch, "LATENCY_LAYER_PARTS", None, 64.0,
                                             LATENCY_FLOOR_MAX=1e12))
    path = tmp_path / "wide.onnx"
    feeds = {"x": np.random.default_rng(4).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    ref = ort.InferenceSession(str(path)).run(["y"], feeds)[0]
    comp, res = _latency_run(path, feeds, tmp_path / "run")
    assert comp.schedule == "latency"
    np.testing.assert_allclose(res.outputs["y"], ref, rtol=0, atol=1e-4)


def _grouped_cnn(path, hw=16):
    """x (1 x 3 x hw x hw) -> 3 x 3 conv to 64 channels (stride 2) -> relu -> a
    grouped 3 x 3 conv 64 -> 64 in 4 groups (its 37 KB of weights outweigh its 16 KB
    input, and a grouped conv has no output-channel split) -> relu -> global pool ->
    classifier."""
    from onnx import helper

    t = _weights(np.random.default_rng(7))
    inits = [t("W0", 64, 3, 3, 3), t("B0", 64), t("W1", 64, 16, 3, 3), t("B1", 64), t("WF", 10, 64), t("BF", 10)]
    node = helper.make_node
    nodes = [node("Conv", ["x", "W0", "B0"], ["c0"], strides=[2, 2], pads=[1, 1, 1, 1]), node("Relu", ["c0"], ["r0"]),
             node("Conv", ["r0", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1], group=4), node("Relu", ["c1"], ["r1"]),
             node("GlobalAveragePool", ["r1"], ["g"]), node("Flatten", ["g"], ["f"]),
             node("Gemm", ["f", "WF", "BF"], ["y"], transB=1)]
    _save_cnn(path, "grouped", nodes, inits, hw)


def test_latency_splits_a_grouped_conv_heavier_than_its_input_by_rows(tmp_path):
    """A grouped conv has no output-channel split; under the latency schedule it is
    cut by rows even where its weights outweigh its input (each part holds them
    all), where it ran whole on one core (RegNetX-400MF's block-4 convs, 11,033
    one-core cycles each, then 352,230 cycles in all against 205,322). `stages`
    keeps the rule before (no row split of an op heavier than its input); both
    within 1e-4 of onnxruntime."""
    from test_mesh_schedules import _check

    path = tmp_path / "grouped.onnx"
    _grouped_cnn(str(path))
    feeds = {"x": np.random.default_rng(4).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    out = _check(path, feeds, tmp_path)
    kinds = {}
    for schedule, (_, _, comp) in out.items():
        i = next(i for i, op in enumerate(comp.plan.ops) if op.name == "graph.conv" and int(op.attr("group", 1)) == 4)
        kinds[schedule] = comp.plan.kinds[i]
    assert kinds["latency"] == "rows" and kinds["stages"] != "rows", kinds


def _ceil_pool_cnn(path, hw=32):
    """x (1 x 3 x hw x hw) -> 3 x 3 conv to 16 channels -> relu -> a 3 x 3 max pool
    of stride 2 in ceil mode (its last window reaches below the image, as in
    torchvision's SqueezeNet) -> a 3 x 3 average pool of stride 2 in ceil mode, not
    counting padding -> global pool -> classifier."""
    from onnx import helper

    t = _weights(np.random.default_rng(9))
    inits = [t("W0", 16, 3, 3, 3), t("B0", 16), t("WF", 10, 16), t("BF", 10)]
    node = helper.make_node
    nodes = [node("Conv", ["x", "W0", "B0"], ["c0"], pads=[1, 1, 1, 1]), node("Relu", ["c0"], ["r0"]),
             node("MaxPool", ["r0"], ["p0"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
             node("AveragePool", ["p0"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
             node("GlobalAveragePool", ["p1"], ["g"]), node("Flatten", ["g"], ["f"]),
             node("Gemm", ["f", "WF", "BF"], ["y"], transB=1)]
    _save_cnn(path, "ceilpool", nodes, inits, hw)


def test_pools_in_ceil_mode_are_cut_by_rows(tmp_path):
    """A max pool in ceil mode (its last window reaching below the image) and an
    average pool in ceil mode that does not count padding are split by rows, the
    band at the bottom padded by what lies beyond the image (`rows.ceil_rows_exact`);
    an average pool counting padding is not. Outputs within 1e-4 of onnxruntime
    under both schedules. torchvision's SqueezeNet 1.1 (ceil-mode max pools on
    111 x 111 activations of 7 MB) did not compile for the mesh at all; it now runs
    in 92,267 cycles under the latency schedule."""
    from nnx.mesh.compile import main_function
    from nnx.mesh.rows import can_split_rows
    from test_mesh_schedules import _check

    path = tmp_path / "ceil.onnx"
    _ceil_pool_cnn(str(path))
    feeds = {"x": np.random.default_rng(4).standard_normal((1, 3, 32, 32)).astype(np.float32)}
    out = _check(path, feeds, tmp_path)
    plan = out["latency"][2].plan
    # 32 rows pooled in ceil mode to 16 (floor: 15), then to 8 (floor: 7)
    assert [int(op.results[0].type.get_shape()[2]) for op in plan.ops if "pool" in op.name][:2] == [16, 8]
    pools = [i for i, op in enumerate(plan.ops) if op.name in ("graph.max_pool", "graph.average_pool")]
    assert len(pools) == 2 and all(plan.kinds[i] in ("rows", "follow") for i in pools), \
        [(plan.ops[i].name, plan.kinds[i]) for i in pools]
    import onnx

    m = onnx.load(str(path))  # the average pool counting padding: whole
    next(n for n in m.graph.node if n.op_type == "AveragePool").attribute.append(
        onnx.helper.make_attribute("count_include_pad", 1))
    onnx.save(m, str(tmp_path / "counting.onnx"))
    ops = list(main_function(_graph(tmp_path / "counting.onnx")).body.block.ops)
    avg = next(op for op in ops if op.name == "graph.average_pool")
    assert int(avg.attr("count_include_pad", 0)) == 1 and not can_split_rows(avg)
