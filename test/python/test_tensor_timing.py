"""Tensor timing (nnx/tensor_timing.py and the `tensor-timing` pass): TAT/TRT/TTS
agree with a brute-force recomputation on random DAGs, as plain data and on graph
IR read back from the `nnx.delay`/`nnx.tat`/`nnx.trt`/`nnx.tts` attributes."""

from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnx.tensor_timing import EXTERNAL, TimingCycleError, asap_timing, scheduled_timing


@st.composite
def dags(draw, max_nodes=40):
    n = draw(st.integers(1, max_nodes))
    delays = [draw(st.integers(0, 1000)) for _ in range(n)]
    preds = []
    for i in range(n):
        k = draw(st.integers(0, 4))
        preds.append([draw(st.integers(-1, i - 1)) if i else EXTERNAL for _ in range(k)])
    return delays, preds


def brute_force(delays, preds):
    """The definitions, recursively: a node without inputs arrives at 0; otherwise
    TRT = latest input arrival (arguments: 0) and TAT = TRT + delay."""

    @functools.lru_cache(maxsize=None)
    def tat(n):
        return 0 if not preds[n] else trt(n) + delays[n]

    @functools.lru_cache(maxsize=None)
    def trt(n):
        return max((0 if p == EXTERNAL else tat(p)) for p in preds[n]) if preds[n] else 0

    tats = [tat(i) for i in range(len(delays))]
    trts = [trt(i) for i in range(len(delays))]
    tts = [[trts[i] - (0 if p == EXTERNAL else tats[p]) for p in preds[i]] for i in range(len(delays))]
    return tats, trts, tts


@given(dags())
@settings(max_examples=200, deadline=None)
def test_asap_matches_brute_force(g):
    delays, preds = g
    t = asap_timing(delays, preds)
    assert (t.tat, t.trt, t.tts) == brute_force(delays, preds)
    assert all(x >= 0 for row in t.tts for x in row)


def test_seed_example_by_hand():
    # 0 -> 1 -> 2 -> 3, and 0 -> 3: the direct input of 3 waits for 1 and 2
    t = asap_timing([5, 10, 20, 1], [[EXTERNAL], [0], [1], [2, 0]])
    assert t.tat == [5, 15, 35, 36]
    assert t.trt == [0, 5, 15, 35]
    assert t.tts[3] == [0, 30]


def test_cycle_is_reported():
    with pytest.raises(TimingCycleError):
        asap_timing([1, 1], [[1], [0]])


def test_scheduled_timing_is_start_minus_finish():
    t = scheduled_timing([[EXTERNAL], [0], [0, 1]], start=[0, 10, 30], finish=[10, 30, 40])
    assert t.tts == [[0], [0], [20, 0]]
    assert t.tat == [10, 30, 40] and t.trt == [0, 10, 30]


# ---- on graph IR ------------------------------------------------------------------------


@st.composite
def graph_functions(draw):
    """A random function of unary/binary/matmul graph ops on one square shape, with
    random `after` edges to earlier ops."""
    n = draw(st.sampled_from([8, 16, 32]))
    ty = f"tensor<{n}x{n}xf32>"
    names = ["%x"]
    lines = []
    for i in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["relu", "sigmoid", "add", "matmul", "mul"]))
        a = draw(st.sampled_from(names))
        after = ""
        if len(names) > 2 and draw(st.booleans()):
            c = draw(st.sampled_from(names[1:]))
            after = f" after({c} : {ty})"
        if kind in ("relu", "sigmoid"):
            lines.append(f"  %v{i} = graph.{kind}({a}){after} : ({ty}) -> {ty}")
        else:
            b = draw(st.sampled_from(names))
            lines.append(f"  %v{i} = graph.{kind}({a}, {b}){after} : ({ty}, {ty}) -> {ty}")
        names.append(f"%v{i}")
    body = "\n".join(lines)
    return f"func.func @f(%x: {ty}) -> {ty} {{\n{body}\n  func.return {names[-1]} : {ty}\n}}\n"


def _run_pass(text, **opts):
    from nnx.ir_io import make_context, parse_module_text
    from nnx.passes.tensor_timing import TensorTimingPass

    ctx = make_context()
    m = parse_module_text(text.encode(), "<test>", ctx)
    TensorTimingPass(**opts).apply(ctx, m)
    m.verify()
    return m


@given(graph_functions())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_pass_annotations_match_recomputation_from_delays(text):
    from xdsl.dialects.func import FuncOp

    m = _run_pass(text)
    f = next(o for o in m.walk() if isinstance(o, FuncOp))
    ops = [o for o in f.body.block.ops if o.next_op is not None]
    index = {o: i for i, o in enumerate(ops)}
    delays = [o.attributes["nnx.delay"].value.data for o in ops]
    preds = [[index.get(v.owner, EXTERNAL) for v in o.operands] for o in ops]
    tats, trts, tts = brute_force(delays, preds)
    for i, o in enumerate(ops):
        assert o.attributes["nnx.tat"].value.data == tats[i]
        assert o.attributes["nnx.trt"].value.data == trts[i]
        assert list(o.attributes["nnx.tts"].get_values()) == tts[i]
        assert delays[i] > 0  # every compute op costs cycles on the target


@given(graph_functions())
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_schedule_mode_slack_is_never_below_asap(text):
    # the block order on one MPU and one VPU can only delay an op, never advance it
    from xdsl.dialects.func import FuncOp

    a = _run_pass(text)
    s = _run_pass(text, mode="schedule")
    fa = next(o for o in a.walk() if isinstance(o, FuncOp))
    fs = next(o for o in s.walk() if isinstance(o, FuncOp))
    for oa, os_ in zip(fa.body.block.ops, fs.body.block.ops):
        if oa.next_op is None:
            continue
        assert os_.attributes["nnx.trt"].value.data >= oa.attributes["nnx.trt"].value.data
        assert os_.attributes["nnx.tat"].value.data >= oa.attributes["nnx.tat"].value.data
