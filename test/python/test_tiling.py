"""nnx/tiling: the tiling rules, one op kind at a time, against the interpreter.

For each case the op is computed whole with the interpreter kernel, then tile by tile
on the input windows the rule names (with the tile-local attributes and constants);
every tile must equal the matching slice of the whole result, reduction chunks summed
into their output tile, and the output tiles must cover the output exactly once. An
op kind without a rule is one clear error, and a bug inside a rule is not swallowed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from nnx.interp.kernels import run_kernel
from nnx.tiling import (
    TILING_RULES,
    Cost,
    NoTilingRule,
    Rule,
    box_shape,
    enumerate_steps,
    plan,
    plan_cost,
    rule_for,
    tiling_rule,
)

RNG = np.random.default_rng(0)


def _f(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _i(*vals):
    return np.array(vals, dtype=np.int64)


# (id, kind, inputs, attrs, constant input positions)
CASES = [
    ("add-broadcast", "Add", [_f(2, 3, 4, 5), _f(1, 3, 1, 5)], {}, ()),
    ("mul-rank-broadcast", "Mul", [_f(3, 4, 6), _f(6)], {}, ()),
    ("relu", "Relu", [_f(4, 6, 5)], {}, ()),
    ("sigmoid", "Sigmoid", [_f(3, 7)], {}, ()),
    ("where", "Where", [RNG.random((3, 1, 5)) > 0.5, _f(3, 4, 5), _f(1, 4, 1)], {}, ()),
    ("clip", "Clip", [_f(4, 5), np.array(-0.5, np.float32), np.array(0.5, np.float32)], {}, ()),
    ("sum-variadic", "Sum", [_f(2, 3, 4), _f(3, 1), _f(2, 1, 4)], {}, ()),
    ("dropout", "Dropout", [_f(3, 5, 4)], {}, ()),
    ("batchnorm", "BatchNormalization",
     [_f(2, 4, 3, 5), _f(4), _f(4), _f(4), np.abs(_f(4)) + 0.5], {"epsilon": 1e-5}, ()),
    ("instancenorm", "InstanceNormalization", [_f(2, 4, 3, 5), _f(4), _f(4)], {}, ()),
    ("global-avg-pool", "GlobalAveragePool", [_f(2, 6, 4, 4)], {}, ()),
    ("lrn", "LRN", [_f(2, 6, 4, 5)], {"size": 3}, ()),
    ("softmax-axis1", "Softmax", [_f(3, 5, 4)], {"axis": 1}, ()),
    ("logsoftmax-last", "LogSoftmax", [_f(4, 6, 5)], {"axis": -1}, ()),
    ("cumsum", "CumSum", [_f(4, 6, 3), _i(1)], {}, (1,)),
    ("layernorm", "LayerNormalization", [_f(3, 4, 8), _f(8), _f(8)], {"axis": -1}, ()),
    ("reduce-sum-keep", "ReduceSum", [_f(3, 4, 5, 6), _i(1, 3)], {"keepdims": 1}, (1,)),
    ("reduce-mean-drop", "ReduceMean", [_f(3, 4, 5), _i(-1)], {"keepdims": 0}, (1,)),
    ("reduce-max-all", "ReduceMax", [_f(3, 4)], {"keepdims": 1}, ()),
    ("argmax", "ArgMax", [_f(4, 5, 6)], {"axis": 1, "keepdims": 0}, ()),
    ("conv-stride-pad-bias", "Conv", [_f(2, 5, 9, 8), _f(6, 5, 3, 3), _f(6)],
     {"strides": [2, 2], "pads": [1, 1, 1, 1]}, ()),
    ("conv-dilated-same", "Conv", [_f(1, 3, 10, 7), _f(4, 3, 3, 2)],
     {"dilations": [2, 1], "auto_pad": "SAME_UPPER"}, ()),
    ("conv-grouped", "Conv", [_f(1, 6, 7, 7), _f(9, 2, 3, 3), _f(9)],
     {"group": 3, "pads": [1, 1, 1, 1]}, ()),
    ("conv-depthwise", "Conv", [_f(2, 4, 6, 6), _f(4, 1, 3, 3)], {"group": 4, "strides": [2, 2]}, ()),
    ("conv-1d", "Conv", [_f(2, 4, 11), _f(3, 4, 3)], {"pads": [2, 0]}, ()),
    ("maxpool", "MaxPool", [_f(2, 3, 9, 9)], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, ()),
    ("avgpool-ceil", "AveragePool", [_f(1, 4, 7, 7)], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, ()),
    ("matmul-batched", "MatMul", [_f(2, 3, 6, 10), _f(10, 7)], {}, ()),
    ("matmul-broadcast-batch", "MatMul", [_f(3, 1, 5, 8), _f(1, 4, 8, 6)], {}, ()),
    ("gemm-trans-c", "Gemm", [_f(9, 6), _f(7, 9), _f(7)], {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, ()),
    ("gemm-c-matrix", "Gemm", [_f(6, 9), _f(9, 5), _f(6, 1)], {}, ()),
    ("transpose", "Transpose", [_f(2, 3, 4, 5)], {"perm": [0, 2, 3, 1]}, ()),
    ("gather-axis1", "Gather", [_f(3, 7, 4), _i(0, 6, 2, 2, 5, 1).reshape(2, 3)], {"axis": 1}, (1,)),
    ("pad-const", "Pad", [_f(3, 4, 5), _i(0, 1, 0, 0, 2, 0)], {"mode": "constant"}, (1,)),
    ("resize-sizes", "Resize", [_f(2, 3, 4, 4), None, None, _i(2, 3, 8, 6)], {"mode": "nearest"}, (3,)),
    ("expand", "Expand", [_f(3, 1, 5), _i(2, 3, 4, 5)], {}, (1,)),
    ("concat-whole", "Concat", [_f(2, 3), _f(2, 4)], {"axis": 1}, ()),
]


def _window(x: np.ndarray, box) -> np.ndarray:
    return x[tuple(slice(s, s + (n - 1) * st + 1, st) for s, n, st in box)]


def _rule(kind, inputs, attrs, consts):
    want = run_kernel(kind, inputs, dict(attrs))
    if kind == "Dropout":
        want = want[:1]  # the mask is not used (the lowering's inference Dropout)
    const_inputs = {j: inputs[j] for j in consts}
    rule = rule_for(kind, [None if x is None else x.shape for x in inputs], [w.shape for w in want], attrs, const_inputs)
    return rule, want


def _check_steps(kind, inputs, steps, want) -> None:
    """Compute every step on its windows; compare with the whole result; check that
    the output tiles cover every output element exactly once."""
    got = [np.zeros(w.shape, np.float64) for w in want]
    written = [np.zeros(w.shape, np.int64) for w in want]
    for st in steps:
        args = []
        for j, x in enumerate(inputs):
            if j in st.consts:
                args.append(st.consts[j])
            elif x is None or st.inputs[j] is None or j in st.drop:
                args.append(None)
            else:
                args.append(_window(x, st.inputs[j]))
        outs = run_kernel(kind, args, dict(st.attrs))[: len(want)]
        for j, box in enumerate(st.outputs):
            idx = tuple(slice(s, s + n * stp, stp) for s, n, stp in box)
            assert outs[j].shape == box_shape(box), (kind, st)
            if st.acc:
                got[j][idx] += outs[j]
            else:
                assert not np.any(written[j][idx]), f"{kind}: output tile written twice: {box}"
                got[j][idx] = outs[j]
                written[j][idx] += 1
    for j, w in enumerate(want):
        assert np.all(written[j] == 1), f"{kind}: output {j} not covered exactly once"
        if w.dtype.kind == "f":
            np.testing.assert_allclose(got[j], w, rtol=1e-4, atol=1e-4, err_msg=kind)
        else:
            np.testing.assert_array_equal(got[j].astype(w.dtype), w, err_msg=kind)


def _halved(rule: Rule, times: int) -> tuple[dict[int, int], int]:
    sizes = {}
    for a in rule.axes:
        s = rule.out_shape[a]
        for _ in range(times):
            s = rule.shrink(a, s) or s
        sizes[a] = s
    k = rule.k_extent
    for _ in range(times):
        k = max(1, (k + 1) // 2) if k else 0
    return sizes, k


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("times", [0, 1, 2, 10])
def test_tiles_recompute_the_op(case, times):
    """Tiles halved `times` times (10: minimal tiles) reproduce the whole op."""
    _, kind, inputs, attrs, consts = case
    rule, want = _rule(kind, inputs, attrs, consts)
    sizes, k = _halved(rule, times)
    steps = enumerate_steps(rule, sizes, k)
    if times == 10 and rule.axes:
        assert len(steps) > 1, f"{kind}: minimal tiles are the whole op"
    _check_steps(kind, inputs, steps, want)


# kinds whose rules must split something: a regression to "one whole tile" fails here
SPLITTABLE = {c[0] for c in CASES} - {"concat-whole", "reduce-max-all"}


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in SPLITTABLE], ids=lambda c: c[0])
def test_rule_has_separable_axes(case):
    _, kind, inputs, attrs, consts = case
    rule, _ = _rule(kind, inputs, attrs, consts)
    assert rule.axes or rule.k_extent, f"{kind}: the rule tiles nothing"


def _reduced_axes(kind, inputs, attrs) -> set[int]:
    x = inputs[0]
    if kind in ("ArgMax", "ArgMin"):
        return {attrs["axis"] % x.ndim}
    if len(inputs) > 1:
        return {int(a) % x.ndim for a in inputs[1]}
    return set(range(x.ndim))


@pytest.mark.parametrize("case", [c for c in CASES if c[1].startswith(("Reduce", "Arg"))], ids=lambda c: c[0])
def test_reductions_never_split_the_reduced_axes(case):
    """A reduction's tiles read every reduced axis whole and never accumulate (the
    reduction is not split into chunks)."""
    _, kind, inputs, attrs, consts = case
    rule, _ = _rule(kind, inputs, attrs, consts)
    assert rule.k_extent == 0
    red = _reduced_axes(kind, inputs, attrs)
    for st in enumerate_steps(rule, *_halved(rule, 10)):
        assert not st.acc
        for a in red:
            assert st.inputs[0][a] == (0, inputs[0].shape[a], 1)


@pytest.mark.parametrize("name", ["conv-stride-pad-bias", "matmul-batched", "gemm-trans-c"])
def test_accumulated_reductions_mark_chunks(name):
    """MPU reductions split into chunks: the first chunk writes, the others accumulate,
    the last one is marked, and the bias/C input is dropped after the first."""
    _, kind, inputs, attrs, consts = next(c for c in CASES if c[0] == name)
    rule, want = _rule(kind, inputs, attrs, consts)
    assert rule.k_extent > 1
    steps = enumerate_steps(rule, {a: rule.out_shape[a] for a in rule.axes}, 1)
    assert [st.acc for st in steps] == [False] + [True] * (rule.k_extent - 1)
    assert [st.last for st in steps] == [False] * (rule.k_extent - 1) + [True]
    if len(inputs) > 2:
        assert all(2 in st.drop for st in steps[1:]) and 2 not in steps[0].drop
    _check_steps(kind, inputs, steps, want)


def _need(steps):
    """Bytes per cache (inputs 0: N, other inputs: W, outputs: O) of the largest tile."""
    tot = {"N": 0, "W": 0, "O": 0}
    for j in range(len(steps[0].inputs)):
        boxes = [st.inputs[j] for st in steps if st.inputs[j] is not None]
        if boxes:
            tot["N" if j == 0 else "W"] += 4 * max(math.prod(box_shape(b)) for b in boxes)
    for j in range(len(steps[0].outputs)):
        tot["O"] += 4 * max(math.prod(box_shape(st.outputs[j])) for st in steps)
    return tot


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in SPLITTABLE], ids=lambda c: c[0])
def test_plan_fits_small_caches(case):
    """`plan` with caches a third of the whole op's footprint: every tile fits, and
    the tiles still reproduce the op."""
    _, kind, inputs, attrs, consts = case
    rule, want = _rule(kind, inputs, attrs, consts)
    whole = _need(enumerate_steps(rule, {a: rule.out_shape[a] for a in rule.axes}, rule.k_extent))
    minimal = _need(enumerate_steps(rule, *_halved(rule, 10)))
    caps = {s: max(whole[s] // 3, minimal[s], 1) for s in whole}
    steps = plan(rule, _need, caps)
    n = _need(steps)
    assert all(n[s] <= caps[s] for s in caps)
    _check_steps(kind, inputs, steps, want)


def test_plan_raises_when_nothing_fits():
    from nnx.tiling import TilingError

    rule, _ = _rule("Softmax", [_f(2, 128)], {"axis": -1}, ())
    with pytest.raises(TilingError, match="smallest tile"):
        plan(rule, _need, {"N": 256, "W": 256, "O": 256})


@pytest.mark.parametrize("name", ["matmul-batched", "conv-stride-pad-bias", "gemm-trans-c"])
def test_plan_cost_tiles_recompute_the_op(name):
    _, kind, inputs, attrs, consts = next(c for c in CASES if c[0] == name)
    rule, want = _rule(kind, inputs, attrs, consts)
    whole = _need(enumerate_steps(rule, {a: rule.out_shape[a] for a in rule.axes}, rule.k_extent))
    caps = {s: max(v // 2, 64) for s, v in whole.items()}
    cost = Cost(in_bytes=lambda j, b: 4 * math.prod(box_shape(b)), out_bytes=lambda j, b: 4 * math.prod(box_shape(b)),
                transfer=20, bw=8, step=10, work=1000)
    steps = plan_cost(rule, _need, caps, cost)
    assert steps is not None and len(steps) > 1
    _check_steps(kind, inputs, steps, want)


def test_every_graph_op_kind_has_a_rule():
    """Each ONNX op of the graph dialect has a tiling rule (its own, a trait's, or the
    registered whole-op rule): the lowering never meets a kind without one."""
    from nnx.dialects.graph import ONNX_OPS
    from nnx.tiling.registry import lookup

    for kind in ONNX_OPS:
        assert callable(lookup(kind)), kind


def test_unknown_kind_is_one_clear_error():
    with pytest.raises(NoTilingRule, match="no tiling rule for ONNX op kind 'NoSuchOp'"):
        rule_for("NoSuchOp", [(2, 3)], [(2, 3)], {}, {})


def test_bug_in_a_rule_is_not_swallowed():
    """A rule that fails is an error, not silently one whole-op tile."""

    @tiling_rule("_BrokenForTest")
    def broken(kind, in_shapes, out_shapes, attrs, const_inputs):
        return Rule(kind, in_shapes, out_shapes, attrs["missing"])

    try:
        with pytest.raises(KeyError):
            rule_for("_BrokenForTest", [(2,)], [(2,)], {}, {})
    finally:
        del TILING_RULES["_BrokenForTest"]


def test_registering_a_kind_twice_is_an_error():
    with pytest.raises(ValueError, match="registered twice"):
        tiling_rule("Conv")(lambda *a: None)


def test_lowering_reports_a_kind_without_rule(monkeypatch):
    """lower-to-chip turns a missing rule into one diagnostic naming the op."""
    from nnx.diagnostics import PassError
    from nnx.ir_io import make_context, parse_module_text
    from nnx.passes.lower_to_chip import LowerToChipPass
    from nnx.tiling import registry

    monkeypatch.delitem(registry.TILING_RULES, "Softmax")
    src = """func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = graph.softmax(%x) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}"""
    ctx = make_context()
    module = parse_module_text(src, ctx=ctx)
    assert isinstance(module, ModuleOp)
    with pytest.raises(PassError, match="graph.softmax.*no tiling rule for ONNX op kind 'Softmax'"):
        LowerToChipPass().apply(ctx, module)
