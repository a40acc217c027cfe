"""Behaviour of `lower-to-chip` against a recorded baseline: outputs, cycles, assembly.

    .venv/bin/python bench/lowering_equivalence.py [--models demo,resnet18,...] [--baseline FILE]
    .venv/bin/python bench/lowering_equivalence.py --record bench/lowering_baseline.json

Compiles (nnx-compile, default pipeline and target) and simulates (nnx-run) a fixed
set of models, each *dense* (the model as exported) and *sparse90* (every Conv/Gemm/
MatMul weight magnitude-pruned to 90 % per tensor, compiled with
`--sparsify weight-threshold=0.0`, as bench/sim_sparsity.py does):

* `demo`          examples/tiny_cnn.onnx
* `resnet18`      ResNet-18, 1x3x224x224           (bench/sim_sparsity.py's export)
* `mobilenet_v2`  MobileNetV2 1.0, 1x3x224x224     (idem)
* `bert2`         BERT, 2 layers, hidden 256, seq 128 (idem)
* `bert_tiny`     the bert-tiny layout (hidden 128, opset 14: LayerNorm/GELU written out)

Per case it records the sha256 of every output array (dtype, shape and bytes), the
total cycles, the busy cycles of every unit, and the sha256 of the assembly text
(`prog.s`; the weights image `prog.data` is hashed too). `--record FILE` writes these
as JSON. The default mode compares against `bench/lowering_baseline.json`: it prints
per case the old and new cycles, their ratio and whether outputs and assembly are
identical, and exits 1 when any output differs or any cycle count changed (a changed
assembly with identical outputs and cycles is reported, not an error).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "test" / "python"))

from tree_import import use_tree  # noqa: E402  (bench/tree_import.py)

use_tree(ROOT)  # this script checks the tree it lives in

MODELS = ("demo", "resnet18", "mobilenet_v2", "bert2", "bert_tiny")
VARIANTS = ("dense", "sparse90")
BASELINE = ROOT / "bench" / "lowering_baseline.json"


def _model(name: str) -> tuple[Path, dict[str, np.ndarray], list[str]]:
    """(ONNX path, inputs, nnx-compile shape arguments)."""
    if name == "demo":
        rng = np.random.default_rng(0)
        feeds = {"image": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)}
        return ROOT / "examples" / "tiny_cnn.onnx", feeds, ["--batch", "1"]
    from sim_sparsity import get_model  # bench/sim_sparsity.py

    return get_model(name)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _array_sha(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    return _sha(f"{a.dtype.str}{a.shape}".encode() + a.tobytes())


def run_case(name: str, variant: str, work: Path) -> dict:
    """Compile and simulate one case; its fingerprint."""
    import test_compile_e2e as e2e  # test/python/test_compile_e2e.py

    model, feeds, shape_args = _model(name)
    args: tuple[str, ...] = tuple(shape_args)
    if variant == "sparse90":
        pruned = work / "pruned.onnx"
        e2e.prune_model(model, pruned, 0.9)
        model = pruned
        args += ("--sparsify", "weight-threshold=0.0")
    prog = work / "prog.s"
    t0 = time.perf_counter()
    rc = e2e.compile_model(model, prog, *args)
    t1 = time.perf_counter()
    if rc != 0:
        raise SystemExit(f"lowering_equivalence: nnx-compile failed on {name}/{variant}")
    outs, report = e2e.simulate(prog, feeds)
    t2 = time.perf_counter()
    data = prog.with_suffix(".data")
    return {
        "outputs": {k: _array_sha(outs[k]) for k in sorted(outs)},
        "cycles": int(report["cycles"]),
        "busy": {u: int(v["busy_cycles"]) for u, v in sorted(report["units"].items())},
        "asm_sha256": _sha(prog.read_bytes()),
        "data_sha256": _sha(data.read_bytes()) if data.exists() else None,
        "compile_seconds": round(t1 - t0, 2),
        "simulate_seconds": round(t2 - t1, 2),
    }


def compare(old: dict, new: dict) -> tuple[bool, str]:
    """(same behaviour?, one line) for one case."""
    same_out = old["outputs"] == new["outputs"]
    ratio = new["cycles"] / max(old["cycles"], 1)
    same_busy = old["busy"] == new["busy"]
    same_asm = old["asm_sha256"] == new["asm_sha256"] and old.get("data_sha256") == new.get("data_sha256")
    ok = same_out and old["cycles"] == new["cycles"] and same_busy
    line = (f"cycles old {old['cycles']:>10} new {new['cycles']:>10} ratio {ratio:.4f}  "
            f"outputs {'identical' if same_out else 'DIFFER'}  busy {'identical' if same_busy else 'DIFFER'}  "
            f"asm {'identical' if same_asm else 'differs'}")
    return ok, line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated subset of {','.join(MODELS)}")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="dense,sparse90 or one of them")
    ap.add_argument("--record", metavar="FILE", help="write the fingerprints to FILE instead of comparing")
    ap.add_argument("--baseline", default=str(BASELINE), help="baseline JSON to compare with")
    args = ap.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    variants = [v for v in args.variants.split(",") if v]
    for m in models:
        if m not in MODELS:
            ap.error(f"unknown model '{m}' (known: {', '.join(MODELS)})")
    for v in variants:
        if v not in VARIANTS:
            ap.error(f"unknown variant '{v}' (known: {', '.join(VARIANTS)})")
    baseline = None
    if not args.record:
        try:
            baseline = json.loads(Path(args.baseline).read_text())
        except OSError as e:
            print(f"lowering_equivalence: cannot read baseline {args.baseline}: {e.strerror}", file=sys.stderr)
            return 1
    results: dict[str, dict] = {}
    failures = 0
    for m in models:
        for v in variants:
            case = f"{m}/{v}"
            with tempfile.TemporaryDirectory() as td:
                res = run_case(m, v, Path(td))
            results[case] = res
            if baseline is None:
                print(f"{case:<22} cycles {res['cycles']:>10}  compile {res['compile_seconds']}s  "
                      f"sim {res['simulate_seconds']}s", flush=True)
                continue
            old = baseline.get(case)
            if old is None:
                print(f"{case:<22} not in the baseline", flush=True)
                failures += 1
                continue
            ok, line = compare(old, res)
            failures += not ok
            print(f"{case:<22} {line}", flush=True)
    if args.record:
        out = Path(args.record)
        prev = json.loads(out.read_text()) if out.exists() else {}
        prev.update(results)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(prev, indent=1, sort_keys=True) + "\n")
        tmp.replace(out)
        print(f"recorded {len(results)} cases in {out}")
        return 0
    print(f"{len(results) - failures}/{len(results)} cases identical" + ("" if not failures else "; MISMATCH"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
