"""nnx.api: the README's example runs as written and agrees with onnxruntime; the API
gives what the tools give (same assembly and data bytes as nnx-compile, same report as
nnx-run --report); mistakes raise the project's exceptions, never SystemExit."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from nnx import api

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "examples" / "tiny_cnn.onnx"
MICRO = ROOT / "test" / "passes" / "lower-to-chip" / "Inputs" / "micro.toml"


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    assert m, "README has no python block in 'Python API'"
    return m.group(1)


def test_readme_example_runs_and_matches_onnxruntime(tmp_path, monkeypatch):
    ort = pytest.importorskip("onnxruntime")
    code = readme_example()
    assert len([ln for ln in code.splitlines() if ln.strip()]) <= 10
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "tiny_cnn.onnx").symlink_to(MODEL)
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(code, "README.md", "exec"), ns)  # noqa: S102 - our own README
    x, reference, result = ns["x"], ns["reference"], ns["result"]
    sess = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"image": x})[0]
    for got in (reference["probs"], result.outputs["probs"]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert result.cycles == result.report["cycles"] > 0
    assert str(result.cycles) in out.getvalue()


def test_compile_gives_the_bytes_nnx_compile_writes(tmp_path):
    from nnx.tools.nnx_compile import main

    assert main([str(MODEL), "--batch", "1", "-o", str(tmp_path / "cli.s")]) == 0
    prog = api.compile(MODEL, batch=1)
    prog.save(tmp_path / "api.s")
    cli_text = (tmp_path / "cli.s").read_text()
    api_text = (tmp_path / "api.s").read_text()
    assert api_text == cli_text.replace("cli.data", "api.data")
    assert (tmp_path / "api.data").read_bytes() == (tmp_path / "cli.data").read_bytes() == prog.data


def test_simulate_report_is_nnx_runs_report(tmp_path):
    from nnx.tools.nnx_run import main

    prog = api.compile(MODEL, batch=1)
    prog.save(tmp_path / "p.s")
    x = np.random.default_rng(3).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main([str(tmp_path / "p.s"), "--input", f"image={tmp_path / 'x.npy'}",
                 "--report", str(tmp_path / "r.json"), "--output-dir", str(tmp_path / "o")]) == 0
    res = api.simulate(prog, {"image": x})
    assert json.loads(json.dumps(res.report)) == json.loads((tmp_path / "r.json").read_text())
    np.testing.assert_array_equal(res.outputs["probs"], np.load(tmp_path / "o" / "probs.npy"))
    # a saved program simulates the same as the in-memory one
    assert api.simulate(tmp_path / "p.s", {"image": x}).cycles == res.cycles


def test_compile_a_module_with_options():
    """A graph module in, a custom pipeline and a target file: the lowering gets the
    target, sparsify is inserted before it."""
    pipe = api.compile_pipeline("canonicalize", "/t.toml", "weight-threshold=0.0")
    assert pipe.text() == ('builtin.module(canonicalize,sparsify{weight-threshold=0.0},'
                           'lower-to-chip{target="/t.toml"})')
    module = api.import_onnx(MODEL, input_shapes={"image": (1, 3, 16, 16)})
    prog = api.compile(module, pipeline="builtin.module(graph-fold-constants,canonicalize,dce)",
                       sparsify="weight-threshold=0.0")
    x = np.ones((1, 3, 16, 16), np.float32)
    got = api.simulate(prog, {"image": x}).outputs["probs"]
    want = api.interpret(api.import_onnx(MODEL, batch=1), {"image": x})["probs"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def _raises(exc_type, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except SystemExit:  # pragma: no cover - the failure this test is about
        pytest.fail("the API raised SystemExit")
    except exc_type as e:
        return e
    pytest.fail(f"no {exc_type.__name__} raised")


def test_errors_are_the_projects_exceptions(tmp_path):
    from nnx.interp.interpreter import InterpError
    from nnx.ir_io import UserError
    from nnx.pipeline import PassFailure, PipelineError
    from nnx.plugins import PluginError
    from nnx.sim.memory import SimError
    from nnx.target import TargetError

    _raises(UserError, api.import_onnx, tmp_path / "missing.onnx")
    module = api.import_onnx(MODEL, batch=1)
    e = _raises(PipelineError, api.run_pipeline, module, "builtin.module(no-such-pass)")
    assert "unknown pass 'no-such-pass'" in str(e)
    e = _raises(PassFailure, api.compile, MODEL, target=str(MICRO), batch=1)
    assert "does not fit the caches" in str(e) and e.diagnostic.severity == "error"
    assert e.diagnostic.file is not None
    _raises(InterpError, api.interpret, module, {})
    prog = api.compile(MODEL, batch=1)
    e = _raises(SimError, api.simulate, prog, {"nope": np.zeros(1, np.float32)})
    assert "no input 'nope'" in str(e)
    bad = tmp_path / "bad.toml"
    bad.write_text('[target]\nname = "x"\n')
    _raises(TargetError, api.load_target, str(bad))
    _raises(PluginError, api.load_pass_plugin, str(tmp_path / "missing.py"))
    assert sorted(os.listdir(tmp_path)) == ["bad.toml"]  # nothing written by the failures


def test_nnx_compile_has_the_pipeline_instrumentation(tmp_path, capsys):
    """--time-passes / --mlir-print-ir-after-all in nnx-compile are nnx-opt's (one
    pipeline runner): one timing line and one dump per pass, in pipeline order."""
    from nnx.tools.nnx_compile import main

    assert main([str(MODEL), "--batch", "1", "-o", str(tmp_path / "p.s"), "--time-passes",
                 "--mlir-print-ir-after-all"]) == 0
    err = capsys.readouterr().err
    passes = api.compile_pipeline().pass_names()
    assert passes[-1] == "lower-to-chip"
    timed = [ln.split(":")[0] for ln in err.splitlines() if re.fullmatch(r"[\w-]+: [0-9.]+ s", ln)]
    assert timed == passes
    dumps = re.findall(r"// -----// IR Dump After ([\w-]+) //----- //", err)
    assert dumps == passes
    assert "chip.program" in err.split("IR Dump After lower-to-chip")[1]


def test_a_program_runs_on_the_target_it_was_compiled_for():
    """Compiled for tiny.toml (small caches: more tiles), simulated there by default;
    the default target (other tiles, other timing) gives the same outputs in other cycles."""
    tiny = ROOT / "test" / "passes" / "lower-to-chip" / "Inputs" / "tiny.toml"
    prog = api.compile(MODEL, target=str(tiny), batch=1)
    assert prog.target == api.load_target(str(tiny))
    x = np.ones((1, 3, 16, 16), np.float32)
    on_tiny = api.simulate(prog, {"image": x})
    assert on_tiny.report["target"] == prog.target.name
    assert api.simulate(prog, {"image": x}, target=str(tiny)).cycles == on_tiny.cycles
    on_default = api.simulate(api.compile(MODEL, batch=1), {"image": x})
    np.testing.assert_allclose(on_tiny.outputs["probs"], on_default.outputs["probs"], rtol=1e-5, atol=1e-6)
    assert on_tiny.cycles != on_default.cycles
