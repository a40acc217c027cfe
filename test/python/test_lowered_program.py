"""nnx/lowering/program.py: the composite lower-to-chip on the program as plain data.

`LowerToChipPass.program` assembles a program without building chip IR (what the
mesh compilation does for every core, docs/mesh.md "Compilation time"); it must be
the program nnx-translate writes from the pass's chip IR, byte for byte, and the
composite must print what the separate passes print (docs/architecture.md, section
7)."""

from __future__ import annotations

from pathlib import Path

import pytest

import test_compile_e2e as e2e

def _sparse_mlp(path: Path) -> Path:
    """An MLP whose instructions carry float parameters (LeakyRelu's alpha, rounded
    to f32 by its attribute) and, sparsified, several options (`acc` with the
    neuron and weight masks)."""
    import numpy as np
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((4096, 64)).astype(np.float32)
    w1[np.abs(w1) < 0.8] = 0
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("LeakyRelu", ["h"], ["y"], alpha=0.01)]
    return e2e._model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 4096])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 64])], [e2e._init("w1", w1)], path)


MODELS = {
    "sparse_mlp": _sparse_mlp,
    "transformer": lambda p: e2e.make_transformer_block(p, seq=16, d=32, heads=4, ff=64),
    "conv": lambda p: e2e.make_conv_net(p, cin=8, c=16, hw=8),
    "inverted_residual": lambda p: e2e.make_inverted_residual(p, c=8, t=6, hw=8),
    "embedding": lambda p: e2e.make_embedding(p, vocab=300, d=16, batch=1, seq=8),
}

OPTIONS = [
    {},  # scheduled, the faster of scheduled and plain kept
    {"keep_faster": False},
    {"schedule": False},
    {"schedule": False, "reuse": True},
]


def _graph(tmp_path: Path, name: str):
    from nnx import api

    model = MODELS[name](tmp_path / f"{name}.onnx")
    module = api.import_onnx(model, None, 1)
    api.run_pipeline(module, "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)")
    if name == "sparse_mlp":
        api.run_pipeline(module, "builtin.module(sparsify{neuron-threshold=0.0})")
    return module


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_program_without_ir_is_the_translated_ir(tmp_path, name, opts):
    from nnx.api import program_from_chip
    from nnx.ir_io import make_context
    from nnx.passes.lower_to_chip import LowerToChipPass
    from nnx.target import load_target

    target = load_target(None)
    module = _graph(tmp_path, name)
    via_ir = module.clone()
    direct = LowerToChipPass(**opts).program(make_context(), module, target, "p.s")
    LowerToChipPass(**opts).apply(make_context(), via_ir)
    translated = program_from_chip(via_ir, target, "p.s")
    assert direct.asm == translated.asm
    assert direct.data == translated.data
    assert len(direct.program.instrs) > 10
    if name == "sparse_mlp":  # what the model is for
        assert any(len(i.opts) == 3 for i in direct.program.instrs)  # acc, nmask, wmask
        assert any(i.attrs.get("alpha") not in (None, 0.01) for i in direct.program.instrs)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_composite_prints_what_the_separate_passes_print(tmp_path, name):
    from nnx import api
    from nnx.target import load_target

    target = load_target(None)
    module = _graph(tmp_path, name)
    separate = module.clone()
    api.run_pipeline(module, "builtin.module(lower-to-chip{keep-faster=false})")
    api.run_pipeline(separate, "builtin.module(graph-hoist-addends,graph-transpose-views,chip-lower,chip-allocate,"
                               "chip-schedule,chip-sync)")
    a, b = api.program_from_chip(module, target), api.program_from_chip(separate, target)
    assert a.asm == b.asm and a.data == b.data
