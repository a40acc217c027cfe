"""nnx/schedule.py: list scheduling of the lowered instruction DAG
(docs/architecture.md, section 7.3; the cost model of section 10) -- orders are
topological, never slower than the emitted order by the cost model, and the simulator's
outputs do not depend on the order."""

from __future__ import annotations

import numpy as np
import pytest

from nnx.schedule import best_order, list_schedule, makespan, upward_ranks

import test_compile_e2e as e2e


def _topological(order, preds) -> bool:
    pos = {i: k for k, i in enumerate(order)}
    return sorted(order) == list(range(len(preds))) and all(pos[p] < pos[i] for i, ps in enumerate(preds) for p in ps)


def test_independent_work_fills_a_stall():
    # emitted: MPU a; VPU b (needs a); VPU c (independent). In order, the VPU idles
    # while a runs and c waits behind b: 300 cycles. Scheduled: c runs during a: 200.
    units = ["MPU0", "VPU0", "VPU0"]
    cost = [100, 100, 100]
    preds = [[], [0], []]
    assert makespan(units, cost, preds, [0, 1, 2]) == 300
    order, t0, t1 = best_order(units, cost, preds)
    assert (t0, t1) == (300, 200) and order == [0, 2, 1]


def test_ranks_prefer_the_critical_path():
    # VPU can run x (short tail) or y (feeds a long MPU op) first: y first is faster
    units = ["VPU0", "VPU0", "MPU0"]
    cost = [50, 50, 500]
    preds = [[], [], [1]]
    assert upward_ranks(cost, preds) == [50, 550, 500]
    order = list_schedule(units, cost, preds)
    assert order.index(1) < order.index(0)
    assert makespan(units, cost, preds, order) == 550


@pytest.mark.parametrize("seed", range(5))
def test_random_dags_topological_and_not_slower(seed):
    rng = np.random.default_rng(seed)
    n = 300
    units = [f"{u}0" for u in rng.choice(["DAU", "MPU", "VPU", "MAP"], n)]
    cost = [int(c) for c in rng.integers(0, 200, n)]
    preds = [sorted(set(int(p) for p in rng.integers(0, i, rng.integers(0, 4)))) if i else [] for i in range(n)]
    for prio in (None, [n - i for i in range(n)]):
        assert _topological(list_schedule(units, cost, preds, prio), preds)
    order, t0, t1 = best_order(units, cost, preds)
    assert _topological(order, preds) and t1 <= t0 and makespan(units, cost, preds, order) == t1


def test_scheduled_program_same_outputs_fewer_cycles(tmp_path):
    """Transformer block: the list-scheduled program gives bit-identical outputs to the
    emitted order and (here) fewer simulated cycles; both match onnxruntime."""
    model = e2e.make_transformer_block(tmp_path / "t.onnx", seq=32, d=64, heads=4, ff=256)
    feeds = e2e._feeds(model)
    outs = {}
    reps = {}
    for opt in ("schedule=false", "schedule=true"):
        d = tmp_path / opt.replace("=", "_")
        d.mkdir()
        pipe = f"builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce,lower-to-chip{{{opt}}})"
        reps[opt] = e2e.check_model(model, feeds, d, "--pipeline", pipe)
        outs[opt] = e2e.simulate(d / "prog.s", feeds)[0]
    for k, v in outs["schedule=false"].items():
        np.testing.assert_array_equal(outs["schedule=true"][k], v)
    assert reps["schedule=true"]["cycles"] < reps["schedule=false"]["cycles"]


# ---- dependencies on chip IR: the composite's shortcut equals what the passes read -----

def _lowered(name: str):
    """(module, emitted entries) of chip-lower + chip-allocate on a lower-to-chip test input."""
    from pathlib import Path

    from nnx.ir_io import make_context, parse_module_text
    from nnx.passes.chip_allocate import allocate_program
    from nnx.passes.chip_lower import lower_module
    from nnx.passes.graph_hoist_addends import GraphHoistAddendsPass
    from nnx.passes.graph_transpose_views import GraphTransposeViewsPass

    path = Path(__file__).resolve().parents[1] / "passes" / "lower-to-chip" / name
    ctx = make_context()
    module = parse_module_text(path.read_text(), str(path), ctx)
    GraphHoistAddendsPass().apply(ctx, module)
    GraphTransposeViewsPass().apply(ctx, module)
    entries = lower_module(ctx, module, "chip-lower", "", True, 0, True, True)
    prog = next(iter(module.body.block.ops))
    allocate_program("chip-allocate", prog)
    return prog, entries


@pytest.mark.parametrize("name", ["chain.mlir", "transpose-view.mlir", "matmul-acc-init.mlir", "gather.mlir"])
def test_emitted_dependencies_equal_those_read_from_the_ir(name):
    # lower-to-chip computes the DAG once from chip-lower's accesses (buffers named
    # S:@tK); chip-schedule and chip-sync run alone parse it back from `nnx.access`
    # after chip-allocate (S:LO:HI): both must be the same DAG, before and after a
    # schedule reorders the block
    from nnx.lowering.deps import emitted_dependencies, instruction_dependencies
    from nnx.passes.chip_schedule import schedule_program
    from nnx.target import load_target

    prog, entries = _lowered(name)
    fast = emitted_dependencies(prog, entries)
    read = instruction_dependencies(prog)
    assert fast.preds == read.preds and fast.units == read.units
    assert sum(map(len, fast.preds)) > 0
    after = schedule_program("chip-schedule", prog, load_target(None), fast)
    assert after.preds == instruction_dependencies(prog).preds
    assert [op for op in after.ops] == list(prog.instructions())


def test_reordered_dependencies_follow_the_instructions():
    from nnx.lowering.deps import Dependencies

    d = Dependencies(["a", "b", "c"], ["DAU0", "MPU0", "VPU0"], [[], [0], []])
    r = d.reordered([2, 0, 1])  # c, a, b
    assert r.ops == ["c", "a", "b"] and r.units == ["VPU0", "DAU0", "MPU0"]
    assert r.preds == [[], [], [1]]  # b (now at 2) waits for a (now at 1)
