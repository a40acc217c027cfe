"""nnx-opt: user mistakes end in one clear line (no traceback, exit 1); generic output
parses in mlir-opt-19; graph-fold-constants does not change what a model computes.

The lit suite (test/tools/nnx-opt/) checks the IR effects and messages in detail.
"""

from __future__ import annotations

import dataclasses
import re
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
NNX_OPT = str(BIN / "nnx-opt")
MLIR_OPT_INSTALL = "apt-get install -y --no-install-recommends mlir-19-tools"

GOOD = """\
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = graph.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %y = graph.add(%x, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %z = graph.relu(%y) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %z : tensor<2xf32>
}
"""


def run_opt(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NNX_OPT, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_user_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    first = proc.stderr.strip().splitlines()[0]
    assert "error:" in first, proc.stderr
    for n in needles:
        assert n in first, proc.stderr


# ---- malformed inputs ---------------------------------------------------------------

MALFORMED = {
    "truncated": (GOOD[: GOOD.index("%z =") + 12], "bad.mlir:"),
    "unknown_op": (GOOD.replace("graph.relu", "graph.frobnicate"), "bad.mlir:4:"),
    "type_mismatch": (
        GOOD.replace("(%y) : (tensor<2xf32>)", "(%y) : (tensor<3xf32>)"),
        "bad.mlir:4:",
    ),
    "result_type": (
        GOOD.replace(
            "%y = graph.add(%x, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
            "  %z = graph.relu(%y) : (tensor<2xf32>) -> tensor<2xf32>",
            "%y = graph.add(%x, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>\n"
            "  %z = graph.relu(%y) : (tensor<4xf32>) -> tensor<2xf32>",
        ),
        "bad.mlir:3:3: error: 'graph.add' op",
    ),
    "undefined_value": (GOOD.replace("(%x, %c)", "(%x, %nope)"), "bad.mlir:3:22:"),
    "not_text": ("\udcff", "bad.mlir"),
    "garbage": ("this is not IR\n", "bad.mlir:1:"),
    "bad_resource": (
        GOOD + '{-#\n dialect_resources: { builtin: { w: "0xZZ" } }\n#-}\n',
        "bad.mlir",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_one_line_no_traceback(case: str, tmp_path: Path) -> None:
    text, needle = MALFORMED[case]
    bad = tmp_path / "bad.mlir"
    bad.write_bytes(text.encode("utf-8", "surrogateescape"))
    out = tmp_path / "out.mlir"
    proc = run_opt(str(bad), "-o", str(out))
    assert_user_error(proc, needle)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".nnx-")]


BAD_PIPELINES = {
    "unknown_pass": (["-p", "no-such-pass"], "unknown pass 'no-such-pass'; valid passes:"),
    "unknown_nested": (
        ["--pass-pipeline=builtin.module(func.func(nope))"],
        "unknown pass 'nope'",
    ),
    "unknown_option": (
        ["--pass-pipeline=builtin.module(graph-fold-constants{size=3})"],
        "has no option 'size'; valid options: max-elements",
    ),
    "bad_value": (["-p", "graph-fold-constants{max-elements=2.5}"], "expects int"),
    "unbalanced": (["--pass-pipeline=builtin.module(dce"], "column"),
    "garbage": (["--pass-pipeline=builtin.module(,)"], "expected a pass name"),
    "bad_flag": (["--frobnicate"], "unrecognized arguments"),
    "missing_file": (["/nonexistent/x.mlir"], "cannot read"),
}


@pytest.mark.parametrize("case", sorted(BAD_PIPELINES))
def test_bad_command_line_one_line_no_traceback(case: str, tmp_path: Path) -> None:
    args, needle = BAD_PIPELINES[case]
    good = tmp_path / "good.mlir"
    good.write_text(GOOD)
    argv = args if case == "missing_file" else [str(good), *args]
    proc = run_opt(*argv)
    assert_user_error(proc, needle)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_stdin_and_split_input(tmp_path: Path) -> None:
    proc = run_opt("--split-input-file", "-p", "graph-fold-constants", stdin=GOOD + "// -----\n" + GOOD)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("func.func @main") == 2
    assert proc.stdout.count("// -----") == 1


# ---- options of pass classes (in process) --------------------------------------------


def test_float_option_accepts_int_and_reports_bad_values(monkeypatch, capsys) -> None:
    from xdsl.passes import ModulePass

    from nnx.passes import registry
    from nnx.tools import nnx_opt

    seen: list[object] = []

    @dataclasses.dataclass(frozen=True)
    class ScalePass(ModulePass):
        name = "test-scale"
        factor: float = 1.0
        enable: bool = False

        def apply(self, ctx, op) -> None:
            seen.append((self.factor, self.enable))

    monkeypatch.setitem(registry.ALL_PASSES, "test-scale", lambda: ScalePass)
    src = ROOT / "test" / "tools" / "nnx-opt" / "io.mlir"
    assert nnx_opt.main([str(src), "-o", os.devnull,
                         "--pass-pipeline=builtin.module(test-scale{factor=2 enable=true})"]) == 0
    assert seen == [(2.0, True)]
    assert nnx_opt.main([str(src), "-p", "test-scale{factor=abc}"]) == 1
    err = capsys.readouterr().err
    assert "option 'factor' of pass 'test-scale' expects float, got 'abc'" in err
    assert nnx_opt.main([str(src), "-p", "test-scale{factor}"]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_every_registered_pass_is_a_frozen_dataclass() -> None:
    from nnx.passes.registry import ALL_PASSES

    for name, factory in ALL_PASSES.items():
        cls = factory()
        assert cls.name == name
        assert dataclasses.is_dataclass(cls), name
        params = getattr(cls, "__dataclass_params__")
        assert params.frozen, f"{name}: options need @dataclass(frozen=True)"


def test_pipeline_parser_shapes() -> None:
    from nnx.pipeline import AnchorNode, PassNode, parse_pipeline_text, pipeline_to_text

    nodes = parse_pipeline_text("builtin.module(a{x=1 y=true},func.func(b, c{s=\"q}\"}),d)")
    assert isinstance(nodes[0], PassNode) and nodes[0].options == "x=1 y=true"
    assert isinstance(nodes[1], AnchorNode) and nodes[1].anchor == "func.func"
    assert [c.name for c in nodes[1].children] == ["b", "c"]
    assert pipeline_to_text(nodes) == (
        'builtin.module(a{x=1 y=true},func.func(b,c{s="q}"}),d)'
    )
    assert [n.name for n in parse_pipeline_text("a,b")] == ["a", "b"]
    assert parse_pipeline_text("builtin.module()") == []


def test_verify_diagnostics_matching() -> None:
    from nnx.diagnostics import Diagnostic
    from nnx.diagnostics import check_expected, collect_expected

    text = (
        "x\n"
        "y // expected-warning {{slow}}\n"
        "// expected-error@+1 {{bad}}\n"
        "z\n"
        "// expected-remark@-3 2 {{note this}}\n"
    )
    exp = collect_expected(text, 10)
    assert [(e.severity, e.line, e.count) for e in exp] == [
        ("warning", 12, 1), ("error", 14, 1), ("remark", 12, 2)
    ]
    diags = [
        Diagnostic("warning", "op is slow", "f.mlir", 12, 1),
        Diagnostic("error", "'x' op bad thing", "f.mlir", 14, 3),
        Diagnostic("remark", "note this", "f.mlir", 12, 1),
        Diagnostic("error", "surprise", "f.mlir", 11, 1),
    ]
    problems = check_expected(diags, exp, "f.mlir")
    assert problems == [
        "f.mlir:11:1: error: unexpected error: surprise",
        'f.mlir:15:4: error: expected remark "note this" was not produced',
    ]


# ---- MLIR interoperability ---------------------------------------------------------


def test_generic_output_parses_in_mlir_opt_19() -> None:
    """Runs the lit check test/tools/nnx-opt/mlir-opt-compat.mlir."""
    if shutil.which("mlir-opt-19") is None:
        pytest.skip(f"mlir-opt-19 is not installed (install it with: {MLIR_OPT_INSTALL})")
    test = ROOT / "test" / "tools" / "nnx-opt" / "mlir-opt-compat.mlir"
    env = dict(os.environ)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", "import lit.main; lit.main.main()", "-v", str(test)],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS: nnx :: tools/nnx-opt/mlir-opt-compat.mlir" in proc.stdout, proc.stdout


# ---- differential test: graph-fold-constants keeps the model's outputs ---------------


def _blob(arr: np.ndarray) -> str:
    return "0x" + struct.pack("<I", 4).hex() + np.ascontiguousarray(arr).tobytes().hex()


def _small_model() -> str:
    rng = np.random.default_rng(7)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    m = rng.standard_normal((4, 4)).astype(np.float32)
    return f"""\
func.func @main(%x: tensor<1x2x4x4xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) {{
  %w0 = graph.constant dense_resource<dw> : tensor<3x2x3x3xf32>
  %half = graph.constant dense<0.5> : tensor<1xf32>
  %w1 = graph.mul(%w0, %half) : (tensor<3x2x3x3xf32>, tensor<1xf32>) -> tensor<3x2x3x3xf32>
  %w = graph.relu(%w1) : (tensor<3x2x3x3xf32>) -> tensor<3x2x3x3xf32>
  %b0 = graph.constant dense<[1.0, -1.0, 2.0]> : tensor<3xf32>
  %b = graph.neg(%b0) : (tensor<3xf32>) -> tensor<3xf32>
  %y = graph.conv(%x, %w, %b) {{kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>}} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  %m0 = graph.constant dense_resource<dm> : tensor<4x4xf32>
  %mt = graph.transpose(%m0) {{perm = array<i64: 1, 0>}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %mm = graph.matmul(%y, %mt) : (tensor<1x3x4x4xf32>, tensor<4x4xf32>) -> tensor<1x3x4x4xf32>
  %s = graph.sigmoid(%mm) after(%b : tensor<3xf32>) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %k = graph.tanh(%mt) after(%y : tensor<1x3x4x4xf32>) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %o = graph.add(%s, %k) : (tensor<1x3x4x4xf32>, tensor<4x4xf32>) -> tensor<1x3x4x4xf32>
  func.return %o, %y : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>
}}
{{-#
  dialect_resources: {{
    builtin: {{
      dw: "{_blob(w)}",
      dm: "{_blob(m)}"
    }}
  }}
#-}}
"""


@pytest.mark.parametrize("max_elements", [1 << 20, 16])
def test_fold_constants_keeps_interpreter_outputs(max_elements: int) -> None:
    pytest.importorskip("nnx.interp.interpreter")
    from nnx import ir_io
    from nnx.interp.interpreter import run_module
    from nnx.passes.graph_fold_constants import GraphFoldConstantsPass

    ctx = ir_io.make_context()
    module = ir_io.parse_module_text(_small_model(), "model.mlir", ctx)
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 4)).astype(np.float32)
    before = run_module(module, [x])

    GraphFoldConstantsPass(max_elements=max_elements).apply(ctx, module)
    module.verify()
    text = ir_io.module_to_text(module)
    ops = [op.name for op in module.walk()]
    if max_elements >= 54:
        # the weight chain, the bias and the transpose fold; tanh keeps its edge
        assert "graph.mul" not in ops and "graph.neg" not in ops
        assert "graph.transpose" not in ops
        assert "graph.tanh" in ops and "after(%y" in text
    else:
        assert "graph.mul" in ops  # 54-element result: over the limit
        assert "graph.neg" not in ops
    after = run_module(ir_io.parse_module_text(text, "folded.mlir", ir_io.make_context()), [x])

    assert list(before) == list(after)
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])


# ---- nnx/pipeline.py on its own (what nnx-opt, nnx-compile and nnx.api share) ------------


def test_split_pass_flags() -> None:
    from nnx.pipeline import split_pass_flags

    argv, flags = split_pass_flags(
        ["-split-input-file", "--canonicalize", "-graph-fold-constants='max-elements=8'",
         "in.mlir", "--", "-dce"],
        {"split-input-file", "pass-pipeline"},
        {"canonicalize", "graph-fold-constants", "dce"},
    )
    assert argv == ["--split-input-file", "in.mlir", "--", "-dce"]
    assert flags == ["canonicalize", "graph-fold-constants{max-elements=8}"]


def _failing_pass(kind: str):
    from xdsl.passes import ModulePass

    from nnx.diagnostics import PassError

    @dataclasses.dataclass(frozen=True)
    class Failing(ModulePass):
        name = "test-failing"

        def apply(self, ctx, op) -> None:
            relu = next(o for o in op.walk() if o.name == "graph.relu")
            if kind == "precondition":
                raise PassError("graph.relu: not supported here", relu)
            raise ZeroDivisionError("a bug")

    return Failing


@pytest.mark.parametrize("kind", ["precondition", "bug"])
def test_pipeline_run_reports_failures(kind: str, monkeypatch) -> None:
    from nnx import ir_io
    from nnx.passes import registry
    from nnx.pipeline import PassFailure, Pipeline

    monkeypatch.setitem(registry.ALL_PASSES, "test-failing", lambda: _failing_pass(kind))
    module = ir_io.parse_module_text(GOOD, "good.mlir")
    pipeline = Pipeline.parse("builtin.module(canonicalize,func.func(test-failing))")
    assert pipeline.pass_names() == ["canonicalize", "test-failing"]
    if kind == "precondition":
        with pytest.raises(PassFailure) as info:
            pipeline.run(module, filename="good.mlir")
        d = info.value.diagnostic
        assert (d.file, d.line, d.col) == ("good.mlir", 4, 3)
        assert str(info.value) == "good.mlir:4:3: error: 'graph.relu' op not supported here"
    else:  # a bug stays a bug (the tools report it as an internal error), with the pass named
        with pytest.raises(ZeroDivisionError) as info:
            pipeline.run(module, filename="good.mlir")
        assert info.value.__notes__ == ["in pass 'test-failing'"]


def test_pipeline_run_verifies_after_each_pass_and_dumps(monkeypatch) -> None:
    import io

    from xdsl.passes import ModulePass

    from nnx import ir_io
    from nnx.passes import registry
    from nnx.pipeline import PassFailure, Pipeline, RunOptions

    @dataclasses.dataclass(frozen=True)
    class BreakIR(ModulePass):
        """Removes the function's terminator: the IR no longer verifies."""

        name = "test-break-ir"

        def apply(self, ctx, op) -> None:
            ret = next(o for o in op.walk() if o.name == "func.return")
            ret.detach()
            ret.erase(safe_erase=False)

    monkeypatch.setitem(registry.ALL_PASSES, "test-break-ir", lambda: BreakIR)
    module = ir_io.parse_module_text(GOOD, "good.mlir")
    out = io.StringIO()
    opts = RunOptions(print_ir_before_all=True, time_passes=True, stream=out)
    with pytest.raises(PassFailure) as info:
        Pipeline.parse("canonicalize,test-break-ir").run(module, filename="good.mlir",
                                                             options=opts)
    assert "(after pass 'test-break-ir')" in str(info.value)
    assert str(info.value).startswith("good.mlir:")
    text = out.getvalue()
    assert text.count("// -----// IR Dump Before") == 2
    assert re.search(r"^canonicalize: [0-9.]+ s$", text, re.M)
    # without verification the broken IR goes through
    module = ir_io.parse_module_text(GOOD, "good.mlir")
    Pipeline.parse("test-break-ir").run(module, options=RunOptions(verify_each=False))
