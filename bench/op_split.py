"""Benchmark (issue 9): op-split on full-size real models, and the interpreter's cost of
computing Conv/Gemm/MatMul in fixed BLAS blocks (docs/topological-order.md,
"Operator splitting").

For each model (ONNX files in cache/bench-models/, e.g. resnet18 tv_googlenet bert2
resnet50), in one run:
  * op-split at the default threshold and at 200 KB: ops added, and the interpreter's
    outputs compared with np.array_equal against the unsplit module (must be equal);
  * interpreter time (process CPU seconds, best of 3) with the blocked products vs the
    same interpreter with every product one plain numpy.matmul call (the baseline),
    and their ratio.

Usage: .venv/bin/python bench/op_split.py [resnet18 tv_googlenet bert2 resnet50]
Run with OPENBLAS_NUM_THREADS=1 for stable CPU times on a shared machine.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "cache" / "bench-models"


def feeds_for(path: Path) -> dict[str, np.ndarray]:
    """Random inputs at the model's static shapes (dynamic dims: 1; ids < 100, masks 1, token types 0)."""
    m = onnx.load(str(path), load_external_data=False)
    init = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(0)
    out = {}
    for vi in m.graph.input:
        if vi.name in init:
            continue
        shape = [d.dim_value or 1 for d in vi.type.tensor_type.shape.dim]
        if vi.type.tensor_type.elem_type == onnx.TensorProto.INT64:
            if "mask" in vi.name:
                out[vi.name] = np.ones(shape, np.int64)
            elif "type" in vi.name:
                out[vi.name] = np.zeros(shape, np.int64)
            else:
                out[vi.name] = rng.integers(0, 100, shape).astype(np.int64)
        else:
            out[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return out


def cpu_time(fn, reps: int = 3) -> float:
    best = float("inf")
    for _ in range(reps):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def plain_products():
    """Swap the blocked products for one numpy.matmul each; returns the undo."""
    import nnx.interp.kernels_nn as K

    saved = (K.blocked_matmul, K.batched_blocked_matmul)

    def plain(a, b, out=None, col_block=None):
        if out is None:
            return np.matmul(a, b)
        return np.matmul(a, b, out=out)

    K.blocked_matmul, K.batched_blocked_matmul = plain, np.matmul

    def undo():
        K.blocked_matmul, K.batched_blocked_matmul = saved

    return undo


def main(names: list[str]) -> int:
    from nnx.importer import import_onnx
    from nnx.interp.interpreter import find_function, run_function
    from nnx.ir_io import make_context
    from nnx.passes.op_split import OpSplitPass

    ok = True
    for name in names:
        path = MODELS / f"{name}.onnx"
        feeds = feeds_for(path)
        shapes = {k: v.shape for k, v in feeds.items()}
        base = import_onnx(str(path), input_shapes=shapes)
        f = find_function(base)
        ref = run_function(f, feeds)
        blocked = cpu_time(lambda: run_function(f, feeds))
        undo = plain_products()
        try:
            plain = cpu_time(lambda: run_function(f, feeds))
        finally:
            undo()
        line = [f"{name}: interpreter {blocked:.3f} s blocked vs {plain:.3f} s plain numpy products "
                f"(ratio {blocked / plain:.2f})"]
        n0 = len(list(base.walk()))
        for threshold in (0, 200_000):
            m = base.clone()
            OpSplitPass(threshold=threshold).apply(make_context(), m)
            m.verify()
            got = run_function(find_function(m), feeds)
            same = all(np.array_equal(ref[k], got[k]) for k in ref)
            ok &= same
            line.append(f"op-split threshold={threshold or 'default'}: +{len(list(m.walk())) - n0} ops, "
                        f"{'bit-identical' if same else 'DIFFERENT'}")
        print("; ".join(line), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["resnet18", "tv_googlenet", "bert2", "resnet50"]))
