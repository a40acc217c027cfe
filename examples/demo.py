"""The nnx demo: import the bundled model, optimise and interpret it, compile it for the
accelerator and run it on the reference simulator, printing the results.

Runs the real command-line tools one after another, as a user would, and shows each
command. Usage: python examples/demo.py [MODEL.onnx]  (default: examples/tiny_cnn.onnx)
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PIPELINE = "builtin.module(graph-fold-constants,canonicalize,dce)"


def step(title: str, cmd: list[str]) -> None:
    print(f"\n== {title}\n$ {' '.join(shlex.quote(c) for c in cmd)}", flush=True)
    r = subprocess.run(cmd)
    if r.returncode != 0:
        sys.exit(f"demo: step failed with exit code {r.returncode}")


def main() -> int:
    model = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "examples" / "tiny_cnn.onnx"
    out = ROOT / "build" / "demo"
    out.mkdir(parents=True, exist_ok=True)
    imported, optimised = out / "model.mlir", out / "model.opt.mlir"
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.save(out / "image.npy", x)

    step("import the ONNX model into the graph dialect",
         [str(BIN / "nnx-import"), str(model), "--batch", "1", "-o", str(imported)])
    step("run a pass pipeline", [str(BIN / "nnx-opt"), str(imported),
                                  f"--pass-pipeline={PIPELINE}", "-o", str(optimised)])
    print("".join(optimised.read_text().partition("{-#")[0].splitlines(True)[:40]))
    step("interpret it", [str(BIN / "nnx-run"), "--interpret", str(optimised),
                          "--input", f"image={out / 'image.npy'}", "--output-dir", str(out / "out")])
    result = np.load(out / "out" / "probs.npy")
    print("\nprobs =", np.array2string(result, precision=4))
    print("top class:", int(result.argmax()))

    prog = out / "model.s"
    step("compile it for the accelerator (embedded default target)",
         [str(BIN / "nnx-compile"), str(model), "--batch", "1", "-o", str(prog)])
    print("".join(prog.read_text().splitlines(True)[:12]) + "...")
    step("run it on the reference simulator",
         [str(BIN / "nnx-run"), str(prog), "--input", f"image={out / 'image.npy'}",
          "--output-dir", str(out / "sim"), "--report", str(out / "report.json"),
          "--trace", str(out / "trace.json")])
    import json

    report = json.loads((out / "report.json").read_text())
    sim = np.load(out / "sim" / "probs.npy")
    print(f"\nsimulated: {report['cycles']} cycles, {report['macs']} MACs, "
          f"{report['bytes_moved']} bytes moved; per unit busy cycles: "
          + ", ".join(f"{u} {v['busy_cycles']}" for u, v in report["units"].items()))
    print(f"simulator and interpreter agree: max |diff| {float(np.max(np.abs(sim - result))):.2e}")
    print(f"trace for ui.perfetto.dev: {out / 'trace.json'}")
    try:
        import onnxruntime as ort
    except ImportError:
        return 0
    ref = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"image": x})[0]
    err = float(np.max(np.abs(result - ref)) / max(float(np.max(np.abs(ref))), 1e-30))
    print(f"onnxruntime agrees: max relative error {err:.2e}")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
