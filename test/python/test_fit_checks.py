"""Fit checks of subgraphs on the mesh (docs/subgraph-split-fuse.md, "Fit checks"):
the cheaper levels never reject what compiles, every level gives programs that
compile, and greedy stays within one program of optimal at each level. Real
models through the importer: a 6-layer MLP (every hidden state an output) and
the zoo's tiny ResNet, on meshes too small to hold either whole."""

from __future__ import annotations

import pytest

import model_zoo
from mesh_targets import resized_mesh
from nnx import api
from nnx.mesh.compile import CHECKS
from nnx.mesh.errors import MeshFitError
from nnx.split_fuse.chain import main_function
from nnx.split_fuse.fit import FitChecker
from nnx.split_fuse.programs import settled_chain
from test_package import GRAPH_PASSES, _mlp_model


def _module(tmp_path, name):
    if name == "mlp":
        path = tmp_path / "mlp.onnx"
        _mlp_model(path, layers=6, every=1)
        module = api.import_onnx(str(path), None, None)
        target = resized_mesh(tmp_path, 3, 2, 131072)
    else:
        shapes = {k: s for k, (s, _) in model_zoo.MODEL_INPUTS[name].items()}
        module = api.import_onnx(model_zoo.get_model(name), shapes, 1)
        target = resized_mesh(tmp_path, 2, 1, 98304)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    return main_function(module, "test"), target


@pytest.mark.parametrize("name", ["mlp", "tiny_resnet"])
def test_storage_check_never_rejects_what_compiles(tmp_path, name):
    """On every short range of the model: a range that compiles in full passes the
    "storage" check (its estimate never rejects a program that fits), and one whose
    storage check passes has a plan (the "storage" level plans as the full one)."""
    f, target = _module(tmp_path, name)
    check = FitChecker(f, target, level="storage", schedule="stages")  # the levels plan as `stages` does
    n = len(check.ops)
    ranges = [(i, j) for i in range(0, n, 2) for j in range(i + 1, min(n, i + 5) + 1)]
    compiled = rejected = 0
    for r in ranges:
        full = check.at(r, "compile")
        stored = check.at(r, "storage")
        if not isinstance(full, MeshFitError):
            compiled += 1
            assert not isinstance(stored, MeshFitError), (r, stored)
            assert stored.cores == len(full.program.cores)
        elif isinstance(stored, MeshFitError):
            rejected += 1
    assert compiled and rejected  # both kinds of range occur


@pytest.mark.parametrize("level", CHECKS)
def test_every_level_gives_programs_that_compile(tmp_path, level):
    """Split (from one op per program) and fuse with each strategy at each level,
    until every chosen range compiles (`settled_chain`, nnx-compile's loop): every chosen range compiles in full, the chain covers the ops in
    order, optimal has the fewest programs and greedy at most one more."""
    f, target = _module(tmp_path, "mlp")
    check = FitChecker(f, target, level=level)
    ones = [(i, i + 1) for i in range(len(check.ops))]
    counts = {}
    for strategy in ("greedy", "optimal", "bidirectional"):
        fitted = settled_chain(check, ones, "halve", "test", strategy)
        chain, check = fitted.chain, fitted.check
        assert all(not isinstance(check.compile(r), MeshFitError) for r in chain)
        assert chain[0][0] == 0 and chain[-1][1] == len(check.ops)
        assert all(a[1] == b[0] for a, b in zip(chain, chain[1:]))
        counts[strategy] = len(chain)
    assert counts["optimal"] <= min(counts.values())
    assert counts["greedy"] <= counts["optimal"] + 1
    assert counts["optimal"] < len(ones)
    if level != "compile":
        assert check.calls["compile"] <= check.calls[level]  # full compiles only for chosen ranges


def _conv_module(name="main", arg="x", value="0.5", pads="1, 1, 1, 1", channels=8):
    from nnx.api import parse_module

    return parse_module(f"""
func.func @{name}(%{arg}: tensor<1x8x16x16xf32> {{nnx.name = "{arg}"}}) -> tensor<1x{channels}x16x16xf32> {{
  %w = graph.constant dense<{value}> : tensor<{channels}x8x3x3xf32>
  %y = graph.conv(%{arg}, %w) {{pads = array<i64: {pads}>}} : (tensor<1x8x16x16xf32>, tensor<{channels}x8x3x3xf32>) -> tensor<1x{channels}x16x16xf32>
  func.return %y : tensor<1x{channels}x16x16xf32>
}}""")


def test_stage_key_ignores_names_and_weight_values_only():
    """The storage memo's key (nnx/mesh/compile.py `stage_key`): a stage that differs
    only in its function and argument names or its constants' values (neither
    changes its storage) shares the key; one with other pads or shapes does not."""
    from nnx.mesh.compile import stage_key

    base = stage_key(_conv_module())
    assert stage_key(_conv_module(name="stage3", arg="t12_0")) == base
    assert stage_key(_conv_module(value="0.25")) == base
    assert stage_key(_conv_module(pads="0, 1, 0, 1")) != base
    assert stage_key(_conv_module(channels=16)) != base
