"""`swap-insert`: interpreter outputs before and after the pass (bit-identical with
mode=swap, within the dtype's tolerance with compression) on real exports, and the
memory budget search on the device-memory model."""

from __future__ import annotations

import numpy as np
import pytest

import model_zoo as mz
from nnx.ir_io import make_context, parse_module_text

TOLERANCE = {"f16": 2e-2, "bf16": 1e-1, "i8": 2.5e-1}
"""Largest error allowed, relative to the result's largest magnitude: rounding of
every swapped activation, propagated through the rest of the network."""


def _import(name):
    from nnx.importer import import_onnx

    shapes = {k: shape for k, (shape, _) in mz.MODEL_INPUTS[name].items()}
    return import_onnx(str(mz.get_model(name)), input_shapes=shapes)


def _func(module):
    from nnx.interp.interpreter import find_function

    return find_function(module)


def _apply(module, **opts):
    from nnx.passes.swap_insert import SwapInsertPass

    m = module.clone()
    SwapInsertPass(**opts).apply(make_context(), m)
    m.verify()
    return m


def _count(module, name):
    return sum(1 for o in module.walk() if o.name == name)


def _run(module, feeds):
    from nnx.interp.interpreter import run_function

    return run_function(_func(module), feeds)


@pytest.mark.parametrize("name", ["tiny_resnet", "bert_2layer"])
def test_swap_is_bit_identical(name):
    m = _import(name)
    feeds = mz.sample_inputs(name)
    ref = _run(m, feeds)
    out = _apply(m, mode="swap")
    assert _count(out, "graph.swap_out") > 0 and _count(out, "graph.swap_in") >= _count(out, "graph.swap_out")
    got = _run(out, feeds)
    for k in ref:
        assert got[k].dtype == ref[k].dtype and np.array_equal(got[k], ref[k]), k


@pytest.mark.parametrize("mode,dtype", [("compress", "f16"), ("compress", "bf16"), ("both", "i8"), ("both", "f16")])
def test_compression_is_within_the_dtype_tolerance(mode, dtype):
    name = "tiny_resnet"
    m = _import(name)
    feeds = mz.sample_inputs(name)
    ref = _run(m, feeds)
    out = _apply(m, mode=mode, dtype=dtype)
    assert _count(out, "graph.compress_tensor") > 0
    got = _run(out, feeds)
    for k in ref:
        scale = float(np.max(np.abs(ref[k]))) or 1.0
        err = float(np.max(np.abs(got[k] - ref[k])))
        assert err <= TOLERANCE[dtype] * scale, (k, err / scale)
        assert err > 0 or dtype == "f16"  # lossy: the round trip is really there


def test_thresholds_select_fewer_candidates():
    m = _import("tiny_resnet")
    every = _count(_apply(m, mode="swap"), "graph.swap_out")
    big = _count(_apply(m, mode="swap", th_size=8192), "graph.swap_out")
    one = _count(_apply(m, mode="swap", max_n=1), "graph.swap_in")
    late = _count(_apply(m, mode="swap", th_tts=1500), "graph.swap_out")
    assert 0 < big < every and one == 1 and 0 < late < every


LONG_LIVED = """
func.func @f(%x: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %a = graph.relu(%x) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %b = graph.sigmoid(%a) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %c = graph.tanh(%b) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %d = graph.sigmoid(%c) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %e = graph.tanh(%d) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %f = graph.sigmoid(%e) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %g = graph.add(%f, %c) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %h = graph.add(%g, %b) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %y = graph.add(%h, %a) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  func.return %y : tensor<256x256xf32>
}
"""


def _peak_cycles(module):
    from nnx.graph_costs import block_timeline
    from nnx.memory_timeline import simulate
    from nnx.target import load_target

    bt = block_timeline(_func(module).body.block, load_target())
    tl = simulate(bt.ops, bt.values, bt.units)
    return tl.peak_bytes, tl.cycles


@pytest.mark.parametrize("mode", ["swap", "compress", "both"])
def test_memory_budget_fits_and_keeps_outputs(mode):
    # policy=seed: the threshold search (with its default dtype f16)
    m = parse_module_text(LONG_LIVED.encode(), "<t>", make_context())
    peak, cycles = _peak_cycles(m)
    budget = int(peak * 0.85)  # one of the six 256 KiB tensors less
    out = _apply(m, memory_budget=budget, mode=mode, policy="seed")
    p2, c2 = _peak_cycles(out)
    assert p2 <= budget < peak
    x = {"arg0": np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)}
    ref, got = _run(m, x)["out0"], _run(out, x)["out0"]
    if mode == "swap":
        assert np.array_equal(ref, got)
    else:
        assert np.max(np.abs(ref - got)) <= TOLERANCE["f16"] * np.max(np.abs(ref))


@pytest.mark.parametrize("policy", ["", "seed", "nnx"])
def test_memory_budget_above_the_peak_changes_nothing(policy):
    m = parse_module_text(LONG_LIVED.encode(), "<t>", make_context())
    peak, _ = _peak_cycles(m)
    out = _apply(m, memory_budget=peak, policy=policy)
    assert _count(out, "graph.swap_out") == _count(out, "graph.compress_tensor") == 0


# ---- defaults (docs/tensor-timing-and-swapping.md, "Swap insertion") -------------------


@pytest.mark.parametrize("given,budget,want", [
    (("", "", ""), 0, ("seed", "swap", "f16")),
    (("", "", ""), 1 << 30, ("nnx", "auto", "auto")),
    (("seed", "", ""), 1 << 30, ("seed", "swap", "f16")),
    (("seed", "compress", "i8"), 1 << 30, ("seed", "compress", "i8")),
    (("", "compress", ""), 0, ("seed", "compress", "f16")),
    (("", "both", ""), 1 << 30, ("nnx", "both", "auto")),
    (("nnx", "swap", "bf16"), 1 << 30, ("nnx", "swap", "bf16")),
    (("", "auto", "f16"), 1 << 30, ("nnx", "auto", "f16")),
])
def test_options_left_out_take_the_documented_defaults(given, budget, want):
    from nnx.passes.swap_insert import resolve_options

    r = resolve_options(*given, budget)
    assert (r.policy, r.mode, r.dtype) == want


@pytest.mark.parametrize("given,budget,msg", [
    (("nnx", "", ""), 0, "policy=nnx needs memory-budget"),
    (("", "auto", ""), 0, "mode=auto needs policy=nnx"),
    (("seed", "auto", ""), 1 << 30, "mode=auto needs policy=nnx"),
    (("seed", "", "auto"), 1 << 30, "dtype=auto needs policy=nnx"),
    (("", "", "f8"), 1 << 30, "dtype must be one of"),
])
def test_options_that_do_not_go_together_are_one_error(given, budget, msg):
    from nnx.diagnostics import PassError
    from nnx.passes.swap_insert import resolve_options

    with pytest.raises(PassError, match=msg):
        resolve_options(*given, budget)


def test_training_step_gradients_bit_identical_with_swap():
    # runs once graph-autodiff exists (docs/tensor-timing-and-swapping.md)
    from nnx.passes.registry import ALL_PASSES

    if "graph-autodiff" not in ALL_PASSES:
        pytest.skip("graph-autodiff is not registered")
    from nnx.importer import import_onnx

    name = "tiny_resnet"
    m = _import(name)
    ap = ALL_PASSES["graph-autodiff"]()
    ap(loss="mse", optimizer="none").apply(make_context(), m)
    m.verify()
    f = _func(m)
    from nnx.interp.interpreter import input_specs

    rng = np.random.default_rng(0)
    feeds = {}
    for n, shape, dt in input_specs(f):
        feeds[n] = rng.standard_normal(shape).astype(dt if dt is not None else np.float32)
    ref = _run(m, feeds)
    out = _apply(m, mode="swap")
    assert _count(out, "graph.swap_out") > 0
    got = _run(out, feeds)
    for k in ref:
        assert np.array_equal(got[k], ref[k]), k
    del import_onnx


# ---- policy=nnx (docs/tensor-timing-and-swapping.md, "The nnx policy") ----------------


def _training_step():
    """A BatchNorm CNN's training step (six conv-BN-ReLU layers of 16 channels on
    8x8 inputs, batch 32, gradients) and feeds for it: a step whose peak, at the
    start of the backward pass, is mostly saved activations."""
    import tempfile
    from pathlib import Path

    from cnn_steps import bn_cnn_step

    _, m = bn_cnn_step(Path(tempfile.mkdtemp()), [(16, 1)] * 6, 32, optimizer="none")
    rng = np.random.default_rng(0)
    feeds = {"input": rng.random((32, 1, 8, 8), dtype=np.float32),
             "labels": rng.integers(0, 10, 32).astype(np.int64)}
    return m, feeds


def _fast_link_target(tmp_path):
    """targets/v100.toml with a host link fast enough for the small step's short
    idle windows (the plan only swaps what fits its window)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "targets" / "v100.toml").read_text()
    text = text.replace("bytes_per_cycle = 8 ", "bytes_per_cycle = 4096 ").replace(
        "latency_cycles = 3000", "latency_cycles = 1")
    path = tmp_path / "fast-link.toml"
    path.write_text(text)
    return str(path)


def _peak_cycles_on(module, target_path):
    from nnx.graph_costs import block_timeline
    from nnx.memory_timeline import simulate
    from nnx.target import load_target

    bt = block_timeline(_func(module).body.block, load_target(target_path))
    tl = simulate(bt.ops, bt.values, bt.units)
    return tl.peak_bytes, tl.cycles


@pytest.mark.parametrize("mode,dtype,frac", [("swap", "f16", 0.95), ("compress", "i8", 0.9),
                                             ("compress", "f16", 0.95), ("auto", "i8", 0.9)])
def test_nnx_policy_training_step(tmp_path, mode, dtype, frac):
    # loss and gradients: bit-identical with swaps alone, within the dtype's rounding
    # with compression; the simulated peak fits the budget
    m, feeds = _training_step()
    target = _fast_link_target(tmp_path)
    peak, _ = _peak_cycles_on(m, target)
    budget = int(peak * frac)
    out = _apply(m, policy="nnx", memory_budget=budget, mode=mode, dtype=dtype, target=target)
    assert _peak_cycles_on(out, target)[0] <= budget < peak
    reductions = _count(out, "graph.swap_out") + _count(out, "graph.compress_tensor")
    assert reductions > 0
    ref, got = _run(m, feeds), _run(out, feeds)
    for k in ref:
        if mode == "swap":
            assert np.array_equal(got[k], ref[k]), k
        else:
            scale = float(np.max(np.abs(ref[k]))) or 1.0
            assert float(np.max(np.abs(got[k] - ref[k]))) <= TOLERANCE[dtype] * scale, k


@pytest.mark.parametrize("mode", ["swap", "compress", "both", "auto"])
def test_nnx_policy_fits_and_adds_no_serialization_edges(mode):
    m = parse_module_text(LONG_LIVED.encode(), "<t>", make_context())
    peak, cycles = _peak_cycles(m)
    budget = int(peak * 0.85)
    # a graph without a backward pass: every reader is a forward reader, so lossy
    # restorations need exact_forward=False (the original behaviour)
    out = _apply(m, memory_budget=budget, mode=mode, policy="nnx", dtype="i8", exact_forward=False)
    p2, c2 = _peak_cycles(out)
    assert p2 <= budget < peak
    x = {"arg0": np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)}
    ref, got = _run(m, x)["out0"], _run(out, x)["out0"]
    if mode == "swap":
        assert np.array_equal(ref, got)
    else:
        assert np.max(np.abs(ref - got)) <= TOLERANCE["i8"] * np.max(np.abs(ref))
    # only restorations carry control edges (their prefetch), never the model's ops
    from nnx.dialects.graph_memory import DecompressOp, SwapInOp

    for o in _func(out).body.block.ops:
        if getattr(o, "after", None) and len(o.after):
            assert isinstance(o, SwapInOp | DecompressOp), o.name


def test_nnx_policy_is_no_slower_than_the_seed_search():
    # same budget, same mode: the plan from the schedule does not lose to the
    # threshold search on the chain graph
    m = parse_module_text(LONG_LIVED.encode(), "<t>", make_context())
    peak, _ = _peak_cycles(m)
    budget = int(peak * 0.85)
    seed = _peak_cycles(_apply(m, memory_budget=budget, mode="compress", dtype="i8", policy="seed"))
    nnx = _peak_cycles(_apply(m, memory_budget=budget, mode="compress", dtype="i8", policy="nnx",
                              exact_forward=False, scales="tensor"))
    assert nnx[0] <= budget and seed[0] <= budget
    assert nnx[1] <= seed[1]


def test_mode_cost_frees_and_charges_by_mode():
    from nnx.passes.swap_plan import mode_cost
    from nnx.target import load_target

    t = load_target()
    n = 1 << 20
    swap, comp, both = (mode_cost(t, n, m, "i8") for m in ("swap", "compress", "both"))
    # i8 keeps one byte per element and 4 bytes per scale (one per tensor by default,
    # one per channel of axis 1 with scales=channel)
    assert swap.freed == both.freed == n and comp.freed == n - n // 4 - 4
    shape = (16, 64, 16, 16)
    assert mode_cost(t, n, "compress", "i8", shape, "channel").freed == n - n // 4 - 4 * 64
    assert swap.vpu_out == 0 and comp.link_out == 0 and both.link_out < swap.link_out
    assert comp.vpu_out == both.vpu_out > 0
    assert mode_cost(t, n, "compress", "f16").freed == n // 2


def _v100():
    from pathlib import Path

    return str(Path(__file__).resolve().parents[2] / "targets" / "v100.toml")


def _compressed_dtypes(module):
    return {o.attr("dtype") for o in module.walk() if o.name == "graph.compress_tensor"}


def test_default_budget_plan_training_step():
    # `swap-insert{memory-budget=B}` alone on a small training step: it is the plan of
    # policy=nnx mode=auto dtype=auto (the same IR), it fits B on the target, and the
    # loss and gradients stay within the tolerance of the dtype it chose
    m, feeds = _training_step()
    target = _v100()
    peak, _ = _peak_cycles_on(m, target)
    budget = int(peak * 0.9)
    out = _apply(m, memory_budget=budget, target=target)
    spelled = _apply(m, memory_budget=budget, target=target, policy="nnx", mode="auto", dtype="auto")
    assert str(out) == str(spelled)
    assert _peak_cycles_on(out, target)[0] <= budget < peak
    dtypes = _compressed_dtypes(out)
    assert len(dtypes) == 1  # one dtype per plan
    (dtype,) = dtypes
    ref, got = _run(m, feeds), _run(out, feeds)
    lossy = 0
    for k in ref:
        scale = float(np.max(np.abs(ref[k]))) or 1.0
        err = float(np.max(np.abs(got[k] - ref[k])))
        assert err <= TOLERANCE[dtype] * scale, (k, err / scale)
        lossy += err > 0
    assert lossy > 0  # the round trip through the compressed dtype is really there


def test_default_budget_plan_with_mode_swap_is_bit_identical(tmp_path):
    # mode=swap given, the rest left to the defaults of a budget (the planner): the
    # loss and every gradient are bit-identical
    m, feeds = _training_step()
    target = _fast_link_target(tmp_path)
    peak, _ = _peak_cycles_on(m, target)
    budget = int(peak * 0.95)
    out = _apply(m, memory_budget=budget, mode="swap", target=target)
    assert _peak_cycles_on(out, target)[0] <= budget
    assert _count(out, "graph.swap_out") > 0 and _count(out, "graph.compress_tensor") == 0
    ref, got = _run(m, feeds), _run(out, feeds)
    assert ref.keys() == got.keys()
    for k in ref:
        assert got[k].dtype == ref[k].dtype and np.array_equal(got[k], ref[k]), k


def test_given_dtype_is_kept_by_the_default_planner():
    # dtype=f16 given under a budget: the planner (default policy and mode) compresses
    # to f16 only, on the chain graph whose default plan is i8
    m = parse_module_text(LONG_LIVED.encode(), "<t>", make_context())
    peak, _ = _peak_cycles(m)
    budget = int(peak * 0.83)
    assert _compressed_dtypes(_apply(m, memory_budget=budget, exact_forward=False)) == {"i8"}
    assert _compressed_dtypes(_apply(m, memory_budget=budget, dtype="f16", exact_forward=False)) == {"f16"}
