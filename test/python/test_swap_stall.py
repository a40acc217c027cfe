"""Plans that stall (docs/tensor-timing-and-swapping.md, "Plans that stall"): below
the floor of round trips that fit their idle windows, `swap-insert{memory-budget=B}`
goes on with round trips the step waits for."""

from __future__ import annotations

import numpy as np
import pytest

from nnx.passes.swap_plan import hold_op
from nnx.diagnostics import PassError
from test_compression import _apply, _peak, _step, _v100


def test_hold_op_is_the_op_at_the_peak_that_finishes_first():
    # ops 0..5 (block order); the peak is at t = 10; the producer is op 0 and the
    # first restored reader op 5, so only ops 1-4 may hold
    start = [0, 2, 8, 9, 12, 30]
    finish = [2, 8, 15, 11, 20, 31]
    assert hold_op(start, finish, 10, 0, 5) == 3  # running at 10, finishes at 11
    assert hold_op(start, finish, 10, 0, 3) == 2  # op 3 is the reader: op 2 (to 15)
    assert hold_op(start, finish, 16, 0, 5) == 4  # only op 4 still runs
    assert hold_op(start, finish, 11, 2, 4) is None  # op 3 finishes at the peak
    assert hold_op(start, finish, 25, 0, 5) is None  # every op between has finished
    assert hold_op(start, finish, 5, 3, 4) is None  # no op between producer and reader
    # an op that starts after the peak counts from the peak: the first to start
    assert hold_op([0, 20, 12], [1, 21, 40], 10, 0, 3) == 2


def test_a_third_of_the_peak_fits_by_stalling_and_keeps_the_forward_pass_exact():
    # a residual BatchNorm CNN step: without stalls no plan reaches a third of its
    # peak; with them one does, the simulated step is slower than without swaps, the
    # loss (a forward value) is bit-identical and every gradient within 5 %
    from nnx.graph_costs import block_timeline
    from nnx.interp.interpreter import find_function, run_function
    from nnx.memory_timeline import simulate
    from nnx.target import load_target

    m, feeds = _step()
    budget = _peak(m) // 3
    with pytest.raises(PassError, match="no plan fits"):
        _apply(m, memory_budget=budget, target=_v100(), stall=False)
    out = _apply(m, memory_budget=budget, target=_v100())
    target = load_target(_v100())

    def cycles(module):
        bt = block_timeline(find_function(module).body.block, target)
        return simulate(bt.ops, bt.values, bt.units).cycles

    assert _peak(out) <= budget
    assert cycles(out) > cycles(m)
    # some op waits for a reduction: a control edge from a swap_out or compress_tensor
    waits = [o for o in find_function(out).body.block.ops
             if any(v.owner.name in ("graph.swap_out", "graph.compress_tensor") for v in getattr(o, "after", ())
                    if hasattr(v.owner, "name"))]
    assert waits
    ref = run_function(find_function(m), feeds)
    got = run_function(find_function(out), feeds)
    assert got["loss"] == ref["loss"]
    for k in ref:
        if k.startswith("grad_"):
            scale = float(np.max(np.abs(ref[k])))
            assert float(np.max(np.abs(got[k] - ref[k]))) <= 0.05 * scale, k


def test_a_step_under_a_stalling_plan_trains_as_without_swaps(tmp_path):
    # training judged by training: a BatchNorm CNN on sklearn's digits, 120 momentum
    # steps, without swaps and with the default plan at a third of its peak (which
    # needs stalls); both train (final loss below a fifth of the first), and the
    # plan's final and held-out losses are within 10 % or 0.05 of the no-swap run's
    from nnx import api
    from nnx.pipeline import PassFailure
    from cnn_steps import bn_cnn_step

    datasets = pytest.importorskip("sklearn.datasets")
    d = datasets.load_digits()
    x = d.images.astype(np.float32)[:, None] / 16.0
    y = d.target.astype(np.int64)
    train, test = {"input": x[:1500], "labels": y[:1500]}, {"input": x[1500:], "labels": y[1500:]}
    _, step = bn_cnn_step(tmp_path, [(16, 1)] * 6, 32, optimizer="momentum", lr=0.05)
    budget = _peak(step) // 3
    with pytest.raises(PassFailure, match="no plan fits"):
        api.run_pipeline(step.clone(), f'swap-insert{{memory-budget={budget} target="{_v100()}" stall=false}}')
    planned = api.run_pipeline(step.clone(), f'swap-insert{{memory-budget={budget} target="{_v100()}"}}')
    assert _peak(planned) <= budget
    runs = [api.train(s, train, 120, test, seed=0) for s in (step, planned)]
    for r in runs:
        assert np.mean(r.losses[-20:]) < 0.2 * r.losses[0]
    (base, got) = runs
    final0, final1 = np.mean(base.losses[-20:]), np.mean(got.losses[-20:])
    assert abs(final1 - final0) <= max(0.1 * final0, 0.05)
    assert abs(got.eval_loss - base.eval_loss) <= max(0.1 * base.eval_loss, 0.05)


def test_working_set_floor_is_the_largest_op_working_set():
    # values: 0 resident (100 B), 1..4 device; op 0 writes 1 (40), op 1 reads 1 writes
    # 2 (30), op 2 reads 1 and 2 writes 3 (50): 40 + 30 + 50 held at once, op 3 reads 3
    # writes 4 (50), in place: counts 50 once; value 4 is kept (a result) from op 3 on
    from nnx.memory_timeline import TimelineOp, TimelineValue, simulate, working_set_floor

    values = [TimelineValue(100, "resident"), TimelineValue(40, "device"), TimelineValue(30, "device"),
              TimelineValue(50, "device"), TimelineValue(50, "device", keep=True)]
    ops = [TimelineOp("a", "", 1, (0,), (1,)), TimelineOp("b", "", 1, (1,), (2,)),
           TimelineOp("c", "", 1, (1, 2), (3,)), TimelineOp("d", "", 1, (3,), (4,), inplace=(3,))]
    assert working_set_floor(ops, values) == (100 + 40 + 30 + 50, 2)
    # no schedule of these ops peaks lower than the floor
    assert simulate(ops, values, {}).peak_bytes >= working_set_floor(ops, values)[0]
    # an op that may write into a same-size input counts it once: with value 2 of
    # 50 B, op c holds 40 + 50 (not 40 + 50 + 50), and op b (40 + 50) is as large
    assert working_set_floor(ops, values, [False, False, False, False])[0] == 220
    values[2] = TimelineValue(50, "device")
    assert working_set_floor(ops, values) == (100 + 40 + 50 + 50, 2)
    assert working_set_floor(ops, values, [False, False, True, False]) == (100 + 40 + 50, 1)


def test_no_plan_below_the_floor_names_the_op(tmp_path):
    # below one op's working set nothing fits, and the error says so with the op
    from nnx import api
    from nnx.pipeline import PassFailure
    from cnn_steps import bn_cnn_step

    _, step = bn_cnn_step(tmp_path, [(16, 1)] * 2, 32, optimizer="momentum", lr=0.05)
    with pytest.raises(PassFailure, match=r"no plan goes below \d+ bytes, the resident bytes and the working set "
                                          r"of op 'graph\.\w+'"):
        api.run_pipeline(step.clone(), f'swap-insert{{memory-budget={_peak(step) // 4} target="{_v100()}"}}')
