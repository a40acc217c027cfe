"""External weights files: `nnx-import --weights-file` and IR that refers to it.

Differential: the same model imported with inline hex blobs and with a weights file
interprets to bit-identical outputs, also after nnx-opt moves the IR elsewhere.
Bad references end in one line and exit 1.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODEL = ROOT / "examples" / "tiny_cnn.onnx"


def run(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True)


def interpret(mlir: Path, x: Path, out: Path) -> np.ndarray:
    r = run(BIN / "nnx-run", "--interpret", mlir, "--input", f"image={x}", "--output-dir", out)
    assert r.returncode == 0, r.stderr
    return np.load(out / "probs.npy")


@pytest.fixture()
def imported(tmp_path: Path):
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32))
    inline = tmp_path / "inline.mlir"
    ext = tmp_path / "ext.mlir"
    assert run(BIN / "nnx-import", MODEL, "--batch", "1", "-o", inline).returncode == 0
    r = run(BIN / "nnx-import", MODEL, "--batch", "1", "-o", ext, "--weights-file", tmp_path / "ext.weights")
    assert r.returncode == 0, r.stderr
    return tmp_path, x, inline, ext


def test_weights_file_same_outputs_and_smaller(imported):
    d, x, inline, ext = imported
    text = ext.read_text()
    assert "external_resources" in text and "dialect_resources" not in text
    assert '"ext.weights:0:' in text  # named relative to the IR file
    assert ext.stat().st_size + (d / "ext.weights").stat().st_size < inline.stat().st_size
    a = interpret(inline, x, d / "o1")
    b = interpret(ext, x, d / "o2")
    assert np.array_equal(a, b)


def test_nnx_opt_rewrites_the_reference_for_another_directory(imported):
    d, x, inline, ext = imported
    other = d / "sub" / "deeper"
    other.mkdir(parents=True)
    moved = other / "moved.mlir"
    r = run(BIN / "nnx-opt", ext, "-p", "graph-fold-constants", "-o", moved)
    assert r.returncode == 0, r.stderr
    assert '"../../ext.weights:' in moved.read_text()
    assert np.array_equal(interpret(inline, x, d / "o1"), interpret(moved, x, d / "o3"))


def test_missing_or_short_weights_file_is_one_line(imported):
    d, x, inline, ext = imported
    shutil.move(d / "ext.weights", d / "gone.weights")
    r = run(BIN / "nnx-opt", ext)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "cannot open weights file ext.weights" in r.stderr
    (d / "ext.weights").write_bytes(b"\0" * 10)
    r = run(BIN / "nnx-run", "--interpret", ext, "--input", f"image={x}", "--output-dir", d / "o")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "lie beyond the end of ext.weights" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(shutil.which("mlir-opt-19") is None, reason="mlir-opt-19 not installed (apt-get install mlir-19-tools)")
def test_generic_form_with_weights_file_parses_in_mlir(imported):
    d, x, inline, ext = imported
    gen = run(BIN / "nnx-opt", ext, "--print-op-generic")
    assert gen.returncode == 0
    r = subprocess.run(["mlir-opt-19", "--allow-unregistered-dialect"], input=gen.stdout,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "nnx_weights" in r.stdout  # MLIR keeps the external resource group


def test_large_models_get_a_weights_file_by_default(tmp_path: Path, monkeypatch):
    """Above AUTO_EXTERNAL_BYTES the weights go to OUT.weights unless --inline-weights."""
    from nnx.tools import nnx_import

    monkeypatch.setattr(nnx_import, "AUTO_EXTERNAL_BYTES", 1024)  # tiny_cnn has ~4 KB
    out = tmp_path / "m.mlir"
    assert nnx_import.main([str(MODEL), "--batch", "1", "-o", str(out)]) == 0
    assert (tmp_path / "m.weights").exists() and "nnx_weights" in out.read_text()
    inline = tmp_path / "i.mlir"
    assert nnx_import.main([str(MODEL), "--batch", "1", "-o", str(inline), "--inline-weights"]) == 0
    assert not (tmp_path / "i.weights").exists() and "dialect_resources" in inline.read_text()
    monkeypatch.setattr(nnx_import, "AUTO_EXTERNAL_BYTES", 1 << 30)
    small = tmp_path / "s.mlir"
    assert nnx_import.main([str(MODEL), "--batch", "1", "-o", str(small)]) == 0
    assert not (tmp_path / "s.weights").exists()
