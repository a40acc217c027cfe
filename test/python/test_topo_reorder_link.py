"""Per-subgraph compilation and the linker (nnx/topo_order/link.py, passes/chip_link.py).

Differential: a model compiled subgraph by subgraph (each subgraph through chip-lower
alone, its inputs symbolic references to other subgraphs' outputs) and linked gives
the same simulator outputs as the whole-model compile (within 1e-6) and as the graph
interpreter, in the ONNX order and in a random topological order.
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_topo_reorder import _branchy_wide_model  # noqa: E402


def _simulate(module, inputs):
    from nnx.sim.asm import parse_program
    from nnx.sim.simulator import Simulator
    from nnx.target import load_target
    from nnx.tools.nnx_translate import translate

    target = load_target()
    with tempfile.TemporaryDirectory() as d:
        text, data = translate(module, f"{d}/p.s", target)
        Path(f"{d}/p.data").write_bytes(data)
        return Simulator(parse_program(text, f"{d}/p.s"), target, record_events=False).run(inputs)


def _parts(module, order):
    from nnx.topo_order.dag import build_dag
    from nnx.topo_order.key_nodes import key_nodes
    from nnx.topo_order.subgraphs import split_at_key_nodes

    dag = build_dag(next(iter(module.body.block.ops)).body.block)
    parts = split_at_key_nodes(len(dag), key_nodes(dag.preds, dag.sinks), dag.preds)
    pos = {v: k for k, v in enumerate(order or range(len(dag)))}
    return dag, [sorted(p, key=pos.__getitem__) for p in parts]


@pytest.mark.parametrize("schedule", [False, True])
@pytest.mark.parametrize("shuffled", [False, True])
def test_linked_program_matches_the_whole_model_compile(schedule, shuffled):
    from nnx.importer import import_model
    from nnx.interp.interpreter import run_module
    from nnx.ir_io import make_context
    from nnx.passes.lower_to_chip import LowerToChipPass
    from nnx.topo_order import orders as O
    from nnx.topo_order.extract import ordered_clone
    from nnx.topo_order.link import compile_linked

    m = import_model(_branchy_wide_model())
    dag, _ = _parts(m, None)
    order = O.random_order(tuple(range(len(dag))), dag.preds, random.Random(7)) if shuffled else None
    if order is not None:
        assert order != tuple(range(len(dag)))
        m = ordered_clone(m, "main", order)
    dag, parts = _parts(m, None)
    assert len(parts) >= 3
    x = np.random.default_rng(1).standard_normal((1, 32, 28, 28)).astype(np.float32)
    ref = run_module(m.clone(), [x])
    whole = m.clone()
    LowerToChipPass(schedule=schedule).apply(make_context(), whole)
    linked = compile_linked(m.clone(), "main", parts, "", schedule, jobs=2)
    linked.verify()
    a, b = _simulate(whole, {"x": x}), _simulate(linked, {"x": x})
    assert sorted(a.outputs) == sorted(b.outputs) == ["cat1"]
    np.testing.assert_allclose(b.outputs["cat1"], a.outputs["cat1"], rtol=0, atol=1e-6)
    want = next(iter(ref.values()))
    np.testing.assert_allclose(b.outputs["cat1"].reshape(want.shape), want, rtol=1e-5, atol=1e-5)


def test_subgraph_programs_reference_each_other_and_compile_once():
    """Each subgraph program's inputs are the graph input or outputs of earlier
    subgraphs by name (symbolic references); the content cache compiles a subgraph
    once across calls."""
    from nnx.dialects.chip import BufferOp, InputOp, OutputOp
    from nnx.importer import import_model
    from nnx.topo_order.link import compile_subgraphs, subgraph_module

    m = import_model(_branchy_wide_model())
    dag, parts = _parts(m, None)
    ret = next(iter(m.body.block.ops)).body.block.last_op
    subs = [subgraph_module(dag, p, ["x"], {id(ret.operands[0]): "cat1"}) for p in parts]
    cache: dict[str, str] = {}
    progs = compile_subgraphs(subs, "", False, 1, cache)
    assert len(cache) == len(parts)
    produced = set()
    for k, p in enumerate(progs):
        ops = list(p.body.block.ops)
        assert any(isinstance(o, BufferOp) for o in ops)  # unallocated: symbolic storage
        ins = {o.sym_name.data for o in ops if isinstance(o, InputOp)}
        assert ins <= produced | {"x"} and (k == 0 or ins & produced)
        produced |= {o.sym_name.data for o in ops if isinstance(o, OutputOp)}
    assert "cat1" in produced
    subs2 = [subgraph_module(dag, p, ["x"], {id(ret.operands[0]): "cat1"}) for p in parts]
    again = compile_subgraphs(subs2, "", False, 1, cache)
    assert len(cache) == len(parts) and [str(p) for p in again] == [str(p) for p in progs]
