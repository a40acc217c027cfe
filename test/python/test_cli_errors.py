"""Every tool goes through nnx/cli.py: a user mistake is one line and exit 1, a bug one
line `TOOL: internal error: ...` and exit 2, never a traceback unless NNX_DEBUG=1.

Each tool's `main` runs in process. The internal error is injected by replacing a
function the tool really calls with one that raises RuntimeError, so the test goes
through the tool's real code path up to that call.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODEL = ROOT / "examples" / "tiny_cnn.onnx"
GOOD_IR = """\
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = graph.relu(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
"""
ASM = """\
.storage 64
.input x S:0x0<2x2xf32>
.output y S:0x20<2x2xf32>
.text
DAU0 LOAD N:0x0<2x2xf32> <- S:0x0<2x2xf32>
DAU0 STORE S:0x20<2x2xf32> <- N:0x0<2x2xf32>
"""


def _boom(*args, **kwargs):
    raise RuntimeError("injected failure")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    ir = tmp_path / "m.mlir"
    ir.write_text(GOOD_IR)
    x = tmp_path / "x.npy"
    np.save(x, np.ones(2, np.float32))
    prog = tmp_path / "p.s"
    prog.write_text(ASM)
    x22 = tmp_path / "x22.npy"
    np.save(x22, np.ones((2, 2), np.float32))
    npz = tmp_path / "g.npz"
    np.savez(npz, pre=np.array([0, 1, 2]), post=np.array([1, 2, 0]))
    return {"ir": str(ir), "x": str(x), "prog": str(prog), "x22": str(x22),
            "npz": str(npz), "tmp": str(tmp_path), "model": str(MODEL)}


def _main(tool: str):
    from importlib import import_module

    return import_module(f"nnx.tools.{tool.replace('-', '_')}").main


# tool -> (argv of a user mistake, text the line must contain)
USER_ERRORS = {
    "nnx-opt": (["{tmp}/missing.mlir"], "missing.mlir: error: cannot read"),
    "nnx-import": (["{tmp}/missing.onnx"], "nnx-import: error:"),
    "nnx-run": (["--interpret", "{ir}", "--input", "x={tmp}/nope.npy"], "nope.npy"),
    "nnx-run-sim": (["{prog}", "--input", "y={x22}"], "no input 'y'"),
    "nnx-translate": (["--to-asm", "{tmp}/missing.mlir"], "missing.mlir"),
    "nnx-compile": (["{tmp}/missing.onnx", "-o", "{tmp}/p.s"], "missing.onnx"),
    "nnx-map": (["{npz}", "-o", "{tmp}/m.npy", "--mesh", "4y4", "--capacity", "10"], "nnx-map: error:"),
    "nnx-topo": (["info", "{tmp}/missing.zip"], "nnx-topo: error:"),
    "nnx-profile": (["{tmp}/missing.mlir", "--report", "{tmp}/r.json"], "missing.mlir"),
}

# tool -> (argv that reaches the patched call, module attribute to break)
INTERNAL_ERRORS = {
    "nnx-opt": (["{ir}", "-p", "canonicalize"], ("xdsl.transforms.canonicalize.CanonicalizePass", "apply")),
    "nnx-import": (["{model}", "--batch", "1"], ("nnx.importer", "import_onnx")),
    "nnx-run": (["--interpret", "{ir}", "--input", "x={x}"], ("nnx.interp.interpreter", "run_function")),
    "nnx-run-sim": (["{prog}", "--input", "x={x22}"], ("nnx.sim.report", "build_report")),
    "nnx-translate": (["--to-asm", "{ir}"], ("nnx.tools.nnx_translate", "build_program")),
    "nnx-compile": (["{model}", "--batch", "1", "-o", "{tmp}/p.s"], ("nnx.api", "import_onnx")),
    "nnx-map": (["{npz}", "-o", "{tmp}/m.npy", "--mesh", "2x2", "--capacity", "10", "--quiet"],
                ("nnx.topology.io", "load_graph")),
    "nnx-topo": (["convert", "{npz}", "{tmp}/g.zip"], ("nnx.topology.io", "load_synapses")),
    "nnx-profile": (["{ir}", "--report", "{tmp}/r.json"], ("nnx.tools.nnx_profile", "profile")),
}

TOOLS = sorted(USER_ERRORS)


def _run(tool: str, argv: list[str], files, capsys) -> tuple[int, list[str]]:
    main = _main("nnx-run" if tool == "nnx-run-sim" else tool)
    rc = main([a.format(**files) for a in argv])
    captured = capsys.readouterr()
    return rc, captured.err.strip().splitlines()


def _patch(monkeypatch, where: tuple[str, str]) -> None:
    from importlib import import_module

    mod, attr = where
    parts = mod.split(".")
    for i in range(len(parts), 0, -1):  # a module, or a class inside one
        try:
            obj = import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        break
    monkeypatch.setattr(obj, attr, _boom)


@pytest.mark.parametrize("tool", TOOLS)
def test_user_error_is_one_line_exit_1(tool, files, capsys, monkeypatch):
    monkeypatch.delenv("NNX_DEBUG", raising=False)
    argv, needle = USER_ERRORS[tool]
    rc, lines = _run(tool, argv, files, capsys)
    assert rc == 1, lines
    assert len(lines) == 1, lines
    assert "error:" in lines[0] and needle in lines[0], lines
    assert "internal error" not in lines[0]


@pytest.mark.parametrize("tool", TOOLS)
def test_bad_flag_is_one_line_exit_1(tool, files, capsys, monkeypatch):
    monkeypatch.delenv("NNX_DEBUG", raising=False)
    argv = {
        "nnx-run": ["--interpret", "{ir}"],
        "nnx-topo": ["info", "{npz}"],
        "nnx-translate": ["--to-asm", "{ir}"],
        "nnx-map": ["{npz}", "-o", "{tmp}/m.npy", "--mesh", "2x2", "--capacity", "10"],
        "nnx-profile": ["{ir}", "--report", "{tmp}/r.json"],
    }.get(tool, ["{ir}"])
    rc, lines = _run(tool, [*argv, "--no-such-flag"], files, capsys)
    assert rc == 1 and len(lines) == 1, lines
    assert "unrecognized arguments: --no-such-flag" in lines[0], lines


@pytest.mark.parametrize("tool", TOOLS)
def test_internal_error_is_one_line_exit_2(tool, files, capsys, monkeypatch):
    monkeypatch.delenv("NNX_DEBUG", raising=False)
    argv, where = INTERNAL_ERRORS[tool]
    _patch(monkeypatch, where)
    rc, lines = _run(tool, argv, files, capsys)
    prog = "nnx-run" if tool == "nnx-run-sim" else tool
    assert rc == 2, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{prog}: internal error: RuntimeError: injected failure"), lines
    assert lines[0].endswith("set NNX_DEBUG=1 for the traceback)"), lines
    assert not Path(files["tmp"], "p.s.data").exists()


@pytest.mark.parametrize("tool", TOOLS)
def test_nnx_debug_prints_the_traceback(tool, files, capsys, monkeypatch):
    monkeypatch.setenv("NNX_DEBUG", "1")
    argv, where = INTERNAL_ERRORS[tool]
    _patch(monkeypatch, where)
    rc, lines = _run(tool, argv, files, capsys)
    assert rc == 2
    text = "\n".join(lines)
    assert lines[0] == "Traceback (most recent call last):", text
    assert "RuntimeError: injected failure" in text
    assert lines[-1].startswith(("nnx-run: internal error", f"{tool}: internal error"))


def test_a_crashing_pass_is_named(files, capsys, monkeypatch):
    from xdsl.transforms.canonicalize import CanonicalizePass

    from nnx.tools import nnx_opt

    monkeypatch.delenv("NNX_DEBUG", raising=False)
    monkeypatch.setattr(CanonicalizePass, "apply", _boom)
    assert nnx_opt.main([files["ir"], "-p", "canonicalize"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "nnx-opt: internal error: RuntimeError: injected failure "
        "(in pass 'canonicalize'; set NNX_DEBUG=1 for the traceback)"
    )


def test_keyboard_interrupt_exits_130(files, capsys, monkeypatch):
    from nnx.tools import nnx_import

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr("nnx.importer.import_onnx", interrupted)
    assert nnx_import.main([files["model"], "--batch", "1"]) == 130
    assert capsys.readouterr().err.strip() == "nnx-import: interrupted"


def test_help_exits_0(capsys):
    for tool in ("nnx-opt", "nnx-compile", "nnx-translate", "nnx-import", "nnx-run"):
        assert _main(tool)(["--help"]) == 0
        assert "usage:" in capsys.readouterr().out


def test_no_second_debug_variable():
    """NNX_DEBUG is the one switch; the old NNX_TRACEBACK is gone from the code."""
    for d in ("nnx", "tools", "passes"):
        for p in (ROOT / d).rglob("*.py"):
            assert "NNX_TRACEBACK" not in p.read_text(), p


def test_installed_scripts_use_the_same_path(files):
    """The console scripts, not only main(): one line, exit 1 / exit 2."""
    exe = BIN / "nnx-translate"
    if not exe.exists():
        pytest.skip("nnx-translate is not installed in this venv")
    env = {k: v for k, v in os.environ.items() if k != "NNX_DEBUG"}
    p = subprocess.run([str(exe), "--to-asm", files["ir"]], capture_output=True, text=True,
                       env=env, timeout=120)
    # graph IR has no chip.program: the user's mistake
    assert p.returncode == 1, p.stderr
    assert p.stderr.strip().splitlines() == [
        f"{files['ir']}: error: expected one chip.program, found 0"
    ]


def test_a_new_tool_gets_the_same_error_path(capsys, monkeypatch):
    """A tool added later is `@tool_main("nnx-x")` on its body: argparse mistakes,
    the project's errors (xDSL's ArgSpecParseError is a BaseException) and bugs are
    classified the same way."""
    from nnx.cli import ArgumentParser, tool_main
    from nnx.ir_io import UserError

    monkeypatch.delenv("NNX_DEBUG", raising=False)

    @tool_main("nnx-x")
    def main(argv):
        p = ArgumentParser(prog="nnx-x")
        p.add_argument("what", choices=["user", "located", "spec", "bug", "ok"])
        what = p.parse_args(argv).what
        if what == "user":
            raise UserError("bad input")
        if what == "located":
            raise UserError("in.mlir:3:5: error: 'graph.conv' op bad pads")
        if what == "spec":
            from xdsl.utils.arg_spec import parse_spec

            parse_spec("a{b=}")  # raises ArgSpecParseError
        if what == "bug":
            raise KeyError("oops")
        return 0

    expected = {
        "ok": (0, []),
        "user": (1, ["nnx-x: error: bad input"]),
        "located": (1, ["in.mlir:3:5: error: 'graph.conv' op bad pads"]),
        "spec": (1, ["nnx-x: error: malformed pass options: Unknown argument value, wrap "
                     "argument in quotes to pass arbitrary string values"]),
        "bug": (2, ["nnx-x: internal error: KeyError: 'oops' (set NNX_DEBUG=1 for the traceback)"]),
        "nope": (1, ["nnx-x: error: argument what: invalid choice: 'nope' (choose from "
                     "'user', 'located', 'spec', 'bug', 'ok') (see nnx-x --help)"]),
    }
    for arg, (rc, lines) in expected.items():
        assert main([arg]) == rc, arg
        assert capsys.readouterr().err.strip().splitlines() == lines, arg
