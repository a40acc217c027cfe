"""Pass plugins (nnx/plugins.py): a file given to --load-pass-plugin, or an entry
point of the group `nnx.passes`, adds its ModulePass subclasses to every pipeline by
name, options included; every broken plugin is one line and exit 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nnx import plugins

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODEL = ROOT / "examples" / "tiny_cnn.onnx"

IR = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
"""

# A graph-level plugin: replaces relu by leaky_relu{alpha}. Its option `alpha` is
# given in the pipeline; a differential check runs the interpreter on both modules.
PLUGIN = '''\
from dataclasses import dataclass

from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern,
)
from xdsl.dialects.builtin import ModuleOp  # imported: not registered

from nnx.dialects import graph


@dataclass(frozen=True)
class _ToLeaky(RewritePattern):
    alpha: float

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReluOp, rewriter: PatternRewriter) -> None:
        ty = op.results[0].type
        new = graph.LeakyReluOp.build_onnx(op.onnx_inputs(), {"alpha": self.alpha}, [ty])
        rewriter.replace(op, new)


@dataclass(frozen=True)
class ReluToLeaky(ModulePass):
    """relu(x) -> leaky_relu(x, alpha)."""

    name = "test-relu-to-leaky"
    alpha: float = 0.01

    def apply(self, ctx, op: ModuleOp) -> None:
        PatternRewriteWalker(_ToLeaky(self.alpha)).rewrite_module(op)
'''
_END = PLUGIN.count("\n") + 2  # the line of code appended to PLUGIN by a case below


@pytest.fixture(autouse=True)
def clean_registry(monkeypatch):
    """Each test starts with no plugin loaded (and no entry points read)."""
    monkeypatch.setattr(plugins, "_plugin_passes", {})
    monkeypatch.setattr(plugins, "_plugin_origin", {})
    monkeypatch.setattr(plugins, "_loaded_files", {})
    monkeypatch.setattr(plugins, "_entry_points_loaded", False)
    monkeypatch.delenv("NNX_DEBUG", raising=False)


@pytest.fixture
def plugin_file(tmp_path: Path) -> Path:
    p = tmp_path / "my_passes.py"
    p.write_text(PLUGIN)
    return p


def _leaky_props() -> tuple[str, str]:
    from nnx.dialects import graph

    return graph.LeakyReluOp.name, "alpha"


def test_plugin_pass_joins_a_pipeline_with_its_option(plugin_file, tmp_path, capsys):
    from nnx.interp.interpreter import run_module
    from nnx.ir_io import parse_module_text
    from nnx.tools import nnx_opt

    src = tmp_path / "m.mlir"
    src.write_text(IR)
    out = tmp_path / "out.mlir"
    rc = nnx_opt.main([str(src), "--load-pass-plugin", str(plugin_file), "-o", str(out),
                       "--pass-pipeline=builtin.module(func.func(test-relu-to-leaky{alpha=0.5}),dce)"])
    assert rc == 0, capsys.readouterr().err
    text = out.read_text()
    assert "graph.leaky_relu" in text and "graph.relu(" not in text
    x = np.array([-2.0, -1.0, 0.0, 3.0], np.float32)
    (y,) = run_module(parse_module_text(text, "out.mlir"), [x]).values()
    np.testing.assert_array_equal(y, np.where(x < 0, 0.5 * x, x))
    # the pass is also usable as an mlir-opt style flag and in the short form
    assert nnx_opt.main([str(src), "--load-pass-plugin", str(plugin_file),
                         "-test-relu-to-leaky=alpha=2", "-o", str(out)]) == 0
    (y,) = run_module(parse_module_text(out.read_text(), "out.mlir"), [x]).values()
    np.testing.assert_array_equal(y, np.where(x < 0, 2 * x, x))


def test_plugin_option_errors_name_the_options(plugin_file, tmp_path, capsys):
    from nnx.tools import nnx_opt

    src = tmp_path / "m.mlir"
    src.write_text(IR)
    assert nnx_opt.main([str(src), f"--load-pass-plugin={plugin_file}",
                         "-p", "test-relu-to-leaky{beta=1}"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["nnx-opt: error: -p: pass 'test-relu-to-leaky' has no option 'beta'; "
                   "valid options: alpha=<float> (default 0.01)"]


def test_only_classes_defined_in_the_file_are_registered(plugin_file):
    names = plugins.load_pass_plugin(str(plugin_file))
    assert names == ["test-relu-to-leaky"]
    assert "test-relu-to-leaky" in plugins.all_passes()
    assert plugins.load_pass_plugin(str(plugin_file)) == names  # loading twice: no-op


@pytest.mark.parametrize(
    "case, text, message",
    [
        ("clash", PLUGIN.replace('"test-relu-to-leaky"', '"canonicalize"'),
         "my_passes.py: error: pass 'canonicalize' (class ReluToLeaky) clashes with the built-in pass of that name; rename it"),
        ("no_name", PLUGIN.replace('    name = "test-relu-to-leaky"\n', ""),
         "my_passes.py: error: pass class 'ReluToLeaky' has no `name` class attribute (the name pipelines call it by, e.g. name = \"my-pass\")"),
        ("syntax", PLUGIN + "\ndef broken(:\n",
         f"my_passes.py: error: cannot load pass plugin: SyntaxError: invalid syntax (line {_END})"),
        ("raises", PLUGIN + "\nraise ImportError('needs torch')\n",
         f"my_passes.py: error: cannot load pass plugin: ImportError: needs torch (line {_END})"),
        ("empty", "X = 1\n", "my_passes.py: error: defines no ModulePass subclass"),
        ("missing", None, "my_passes.py: error: cannot load pass plugin: no such file"),
    ],
)
@pytest.mark.parametrize("tool", ["nnx-opt", "nnx-compile"])
def test_broken_plugins_are_one_line_exit_1(case, text, message, tool, tmp_path, capsys):
    from nnx.tools import nnx_compile, nnx_opt

    plugin = tmp_path / "my_passes.py"
    if text is not None:
        plugin.write_text(text)
    src = tmp_path / "m.mlir"
    src.write_text(IR)
    if tool == "nnx-opt":
        rc = nnx_opt.main([str(src), "--load-pass-plugin", str(plugin)])
    else:
        rc = nnx_compile.main(["--load-pass-plugin", str(plugin), "--print-pipeline"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(lines) == 1, lines
    assert lines[0] == f"{tmp_path}/{message}", lines


def test_nnx_compile_runs_a_plugin_pass(plugin_file, tmp_path, capsys):
    """The plugin joins nnx-compile's pipeline: tiny_cnn's relus become leaky_relu
    (alpha=0.5), visible in the simulated outputs against the interpreter."""
    from nnx import api
    from nnx.tools import nnx_compile

    pipe = ("builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce,"
            "func.func(test-relu-to-leaky{alpha=0.5}))")
    assert nnx_compile.main(["--load-pass-plugin", str(plugin_file), "--pipeline", pipe,
                             "--print-pipeline"]) == 0
    assert capsys.readouterr().out.strip() == pipe[:-1] + ",lower-to-chip)"
    prog = tmp_path / "p.s"
    assert nnx_compile.main([str(MODEL), "--batch", "1", "-o", str(prog),
                             "--load-pass-plugin", str(plugin_file), "--pipeline", pipe]) == 0
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    sim = api.simulate(str(prog), {"image": x}).outputs
    module = api.import_onnx(MODEL, batch=1)
    api.run_pipeline(module, pipe)
    want = api.interpret(module, {"image": x})
    plain = api.interpret(api.import_onnx(MODEL, batch=1), {"image": x})
    for name in want:
        np.testing.assert_allclose(sim[name], want[name], rtol=1e-4, atol=1e-5)
    assert any(not np.allclose(want[n], plain[n]) for n in want), "the plugin changed nothing"


def test_entry_point_group_is_loaded_on_first_use(tmp_path, monkeypatch):
    """A distribution on sys.path with an `nnx.passes` entry point (a real dist-info
    directory, read by importlib.metadata)."""
    pkg = tmp_path / "nnx_ep_demo.py"
    pkg.write_text(PLUGIN.replace("test-relu-to-leaky", "ep-relu-to-leaky"))
    dist = tmp_path / "nnx_ep_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: nnx-ep-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[nnx.passes]\nep-relu-to-leaky = nnx_ep_demo:ReluToLeaky\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from nnx.pipeline import Pipeline

    p = Pipeline.parse("func.func(ep-relu-to-leaky{alpha=0.25})")
    assert p.pass_names() == ["ep-relu-to-leaky"]
    assert p.nodes[0].children[0].instance.alpha == 0.25
    assert "entry point 'ep-relu-to-leaky = nnx_ep_demo:ReluToLeaky'" in plugins._plugin_origin[
        "ep-relu-to-leaky"]


def test_entry_point_naming_a_module_and_a_clash(tmp_path, monkeypatch):
    from importlib.metadata import EntryPoint

    mod = tmp_path / "nnx_ep_mod.py"
    mod.write_text(PLUGIN.replace("test-relu-to-leaky", "dce"))
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [EntryPoint("mine", "nnx_ep_mod", plugins.ENTRY_POINT_GROUP)]
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: eps)
    with pytest.raises(plugins.PluginError, match="pass 'dce' .* clashes with the built-in pass"):
        plugins.all_passes()


def test_entry_point_errors_through_a_tool(tmp_path, monkeypatch, capsys):
    from importlib.metadata import EntryPoint

    from nnx.tools import nnx_opt

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "nnx_ep_clash.py").write_text(PLUGIN.replace("test-relu-to-leaky", "dce"))
    (tmp_path / "nnx_ep_broken.py").write_text("import no_such_module_here\n")
    src = tmp_path / "m.mlir"
    src.write_text(IR)
    cases = {
        "nnx_ep_clash": "nnx-opt: error: entry point 'mine = nnx_ep_clash' of group nnx.passes: "
                        "pass 'dce' (class ReluToLeaky) clashes with the built-in pass of that "
                        "name; rename it",
        "nnx_ep_broken": "nnx-opt: error: entry point 'mine = nnx_ep_broken' of group nnx.passes: "
                         "cannot load: ModuleNotFoundError: No module named 'no_such_module_here'",
    }
    for module, line in cases.items():
        eps = [EntryPoint("mine", module, plugins.ENTRY_POINT_GROUP)]
        monkeypatch.setattr("importlib.metadata.entry_points", lambda group, eps=eps: eps)
        monkeypatch.setattr(plugins, "_entry_points_loaded", False)
        monkeypatch.setattr(plugins, "_plugin_passes", {})
        assert nnx_opt.main([str(src)]) == 1
        assert capsys.readouterr().err.strip().splitlines() == [line]


def test_two_plugin_files_with_the_same_pass_name(tmp_path, capsys):
    from nnx.tools import nnx_opt

    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(PLUGIN)
    b.write_text(PLUGIN)
    src = tmp_path / "m.mlir"
    src.write_text(IR)
    assert nnx_opt.main([str(src), "--load-pass-plugin", str(a), "--load-pass-plugin", str(b)]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"{b}: error: pass 'test-relu-to-leaky' (class ReluToLeaky) clashes with the pass of "
        f"that name from {a}"
    ]


def test_plugin_via_the_installed_script(plugin_file, tmp_path):
    exe = BIN / "nnx-opt"
    if not exe.exists():
        pytest.skip("nnx-opt is not installed in this venv")
    src = tmp_path / "m.mlir"
    src.write_text(IR)
    p = subprocess.run([str(exe), str(src), "--load-pass-plugin", str(plugin_file),
                        "-p", "test-relu-to-leaky{alpha=0.5}"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "graph.leaky_relu" in p.stdout and "5.000000e-01" in p.stdout


# ---- the example plugin: another instruction scheduler ---------------------------------

EXAMPLE = ROOT / "examples" / "plugin_scheduler.py"


def _example_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("plugin_scheduler_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _is_topological(order, preds) -> bool:
    pos = {i: k for k, i in enumerate(order)}
    return sorted(order) == list(range(len(preds))) and all(
        pos[p] < pos[i] for i, ps in enumerate(preds) for p in ps)


def test_example_scheduler_order_is_topological_and_reversed_rank():
    """The policy alone, on plain data: two independent chains, a long one (0-1-2-3)
    and a short one (4-5); reverse rank runs the short chain first."""
    ex = _example_module()
    preds = [[], [0], [1], [2], [], [4]]
    assert ex.ranks(preds) == [4, 3, 2, 1, 2, 1]
    order = ex.reverse_rank_order(preds)
    assert _is_topological(order, preds)
    assert order == [4, 5, 0, 1, 2, 3]
    assert ex.reverse_rank_order(preds, window=1) == [0, 1, 2, 3, 4, 5]  # oldest only
    rng = np.random.default_rng(0)
    for _ in range(50):  # random DAGs: always a permutation respecting every edge
        n = int(rng.integers(1, 40))
        preds = [sorted({int(p) for p in rng.integers(0, i, size=rng.integers(0, 4))}) if i else []
                 for i in range(n)]
        for w in (0, 1, 3):
            assert _is_topological(ex.reverse_rank_order(preds, w), preds)
    with pytest.raises(ValueError):
        ex.reverse_rank_order([[1], []])


def test_example_plugin_registers_both_policies():
    names = plugins.load_pass_plugin(str(EXAMPLE))
    assert sorted(names) == ["chip-schedule-program-order", "chip-schedule-reverse-rank"]
    from nnx.pipeline import Pipeline

    p = Pipeline.parse("chip-schedule-reverse-rank{window=8}")
    assert p.nodes[0].instance.window == 8


def _chip_passes_available() -> bool:
    import importlib.util

    if importlib.util.find_spec("nnx.lowering") is None:
        return False
    if importlib.util.find_spec("nnx.lowering.deps") is None:
        return False
    return {"chip-lower", "chip-allocate", "chip-schedule", "chip-sync"} <= set(
        plugins.builtin_passes())


def test_example_scheduler_changes_cycles_not_outputs(tmp_path):
    """End to end through nnx-compile --load-pass-plugin: the same model with
    chip-schedule and with the plugin's policies gives bit-identical outputs and
    different cycle counts."""
    if not _chip_passes_available():
        pytest.skip("needs chip-schedule (the chip-lower/-allocate/-schedule/-sync passes "
                    "and nnx.lowering.deps)")
    from nnx import api
    from nnx.tools import nnx_compile

    head = "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce,chip-lower,chip-allocate,"
    x = np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32)
    results = {}
    for sched in ("chip-schedule", "chip-schedule-reverse-rank", "chip-schedule-program-order"):
        prog = tmp_path / f"{sched}.s"
        rc = nnx_compile.main([str(MODEL), "--batch", "1", "-o", str(prog),
                               "--load-pass-plugin", str(EXAMPLE),
                               "--pipeline", head + sched + ",chip-sync)"])
        assert rc == 0
        results[sched] = api.simulate(prog, {"image": x})
    base = results["chip-schedule"]
    for sched, res in results.items():
        for name in base.outputs:
            np.testing.assert_array_equal(res.outputs[name], base.outputs[name], err_msg=sched)
    assert results["chip-schedule-reverse-rank"].cycles != base.cycles
    # program order is chip-lower's emission order: the same program as no scheduler
    plain = tmp_path / "plain.s"
    assert nnx_compile.main([str(MODEL), "--batch", "1", "-o", str(plain),
                             "--pipeline", head + "chip-sync)"]) == 0
    def body(path):  # the assembly without its `.data FILE` line (file names differ)
        return [ln for ln in path.read_text().splitlines() if not ln.startswith(".data ")]

    assert body(plain) == body(tmp_path / "chip-schedule-program-order.s")
