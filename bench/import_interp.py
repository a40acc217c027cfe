"""Benchmark (issue 2): import, nnx-opt round-trip and interpretation of full-size models.

For ResNet-50 and BERT-base (batch 1), in one run, as whole processes (start-up and
loading included):
  * nnx-import vs iree-import-onnx (PyPI iree-base-compiler, in cache/iree-venv),
  * nnx-opt round-trip (parse + verify + print) of the imported IR,
  * nnx-run --interpret vs an onnxruntime process that loads the model and runs it once,
    both from the self-contained IR (inline hex blobs) and from IR with an external
    weights file (`nnx-import --weights-file`, memory-mapped),
and checks that nnx's outputs match onnxruntime's (max |a-b| / max|b| <= 1e-4).
Prints the ratios. Usage: .venv/bin/python bench/import_interp.py [resnet50 bert-base]
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
IREE = ROOT / "cache" / "iree-venv" / "bin" / "iree-import-onnx"
WORK = ROOT / "cache" / "bench-work"

ORT_SCRIPT = """
import sys, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
feeds = {n.split("=")[0]: np.load(n.split("=")[1]) for n in sys.argv[3:]}
outs = s.run(None, feeds)
np.savez(sys.argv[2], *outs)
"""


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return dt


def make_inputs(model_path: Path, out: Path) -> list[str]:
    m = onnx.load(str(model_path), load_external_data=False)
    init = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(0)
    specs = []
    for vi in m.graph.input:
        if vi.name in init:
            continue
        shape = [d.dim_value or 1 for d in vi.type.tensor_type.shape.dim]
        et = vi.type.tensor_type.elem_type
        if et == onnx.TensorProto.INT64:
            arr = rng.integers(0, 1000, shape).astype(np.int64)
            if "mask" in vi.name:
                arr = np.ones(shape, np.int64)
            if "token_type" in vi.name:
                arr = np.zeros(shape, np.int64)
        else:
            arr = rng.standard_normal(shape).astype(np.float32)
        p = out / f"in_{vi.name}.npy"
        np.save(p, arr)
        specs.append(f"{vi.name}={p}")
    return specs


def bench(name: str) -> dict[str, float]:
    path = models.get(name)
    work = WORK / name
    work.mkdir(parents=True, exist_ok=True)
    inputs = make_inputs(path, work)
    row: dict[str, float] = {}
    row["ort"] = min(timed([sys.executable, "-c", ORT_SCRIPT, str(path), str(work / "ref.npz"), *inputs]) for _ in range(2))
    mlir = work / "model.mlir"
    row["import"] = timed([str(BIN / "nnx-import"), str(path), "-o", str(mlir), "--inline-weights"])
    if IREE.exists():
        row["iree"] = timed([str(IREE), str(path), "-o", str(work / "iree.mlir")])
    row["roundtrip"] = timed([str(BIN / "nnx-opt"), str(mlir), "-o", str(work / "rt.mlir")])
    ext = work / "model.ext.mlir"
    row["import_ext"] = timed([str(BIN / "nnx-import"), str(path), "-o", str(ext),
                               "--weights-file", str(work / "model.weights")])
    row["roundtrip_ext"] = timed([str(BIN / "nnx-opt"), str(ext), "-o", str(work / "rt.ext.mlir")])
    ref = np.load(work / "ref.npz")
    m = onnx.load(str(path), load_external_data=False)
    worst = 0.0
    for key, ir in (("interp", mlir), ("interp_ext", ext)):
        outdir = work / f"out_{key}"
        args = [str(BIN / "nnx-run"), "--interpret", str(ir), "--output-dir", str(outdir)]
        for s in inputs:
            args += ["--input", s]
        row[key] = timed(args)
        for i, o in enumerate(m.graph.output):
            got = np.load(outdir / f"{o.name}.npy")
            want = ref[f"arr_{i}"]
            worst = max(worst, float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30)))
    row["rel_err"] = worst
    return row


def main() -> int:
    names = sys.argv[1:] or ["resnet50", "bert-base"]
    print("inline = self-contained IR (hex blobs); ext = IR + weights file (--weights-file)")
    print(f"{'model':10} {'ort s':>6} {'iree s':>7} {'imp/iree':>9} {'ext imp/iree':>12} "
          f"{'rt s':>6} {'ext rt s':>8} {'interp/ort':>10} {'ext interp/ort':>14} {'rel err':>8}")
    for n in names:
        r = bench(n)
        iree = r.get("iree", float("nan"))
        print(f"{n:10} {r['ort']:6.2f} {iree:7.2f} {r['import'] / iree:9.2f} {r['import_ext'] / iree:12.2f} "
              f"{r['roundtrip']:6.2f} {r['roundtrip_ext']:8.2f} {r['interp'] / r['ort']:10.2f} "
              f"{r['interp_ext'] / r['ort']:14.2f} {r['rel_err']:8.1e}")
        print(f"{'':10} seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in r.items() if k != "rel_err"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
