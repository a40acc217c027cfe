"""The default pipeline is never slower than schedule=false: per model, in one run.

    .venv/bin/python bench/schedule_never_slower.py [--models a,b,...] [--json out.json]

Per model, the ONNX order lowered by `lower-to-chip` three ways and timed by the
simulator's timing (`nnx.sim.timing.replay`, equal to nnx-run's cycles on dense
programs):

* `sf`   schedule=false (the emitted op-by-op order; the baseline of the ratios);
* `st0`  schedule=true keep-faster=false (graph rewrites + list scheduling: the
         default before keep-faster);
* `st`   the default (schedule=true keep-faster=true: the faster of both programs).

Prints `st0/sf` and `st/sf` per model and the models where the default is slower than
schedule=false (must be none). Models: bench/topo_order.py's (light zoo, torchvision
exports, randomly wired networks) and bench/sim_sparsity.py's ResNet-18,
MobileNetV2 and 2-layer BERT.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "test" / "python"))

DEFAULT = ("tv_densenet121,randwire_ws32_s1,randwire_ws32_s2,randwire_ws48_s3,"
           "inception_v1,inception_v2,densenet121,resnet50,shufflenet,squeezenet,bvlc_alexnet,vgg19,zfnet512,"
           "resnet18,mobilenet_v2,bert2")


def load(name: str):
    """The graph-dialect module of `name` (bench/topo_order.py's models, plus
    bench/sim_sparsity.py's resnet18, mobilenet_v2, bert2)."""
    import topo_order as T

    if name in ("resnet18", "mobilenet_v2", "bert2"):
        import sim_sparsity as S

        from nnx.importer import import_onnx

        path, feeds, _ = S.get_model(name)
        return import_onnx(str(path), {k: v.shape for k, v in feeds.items()})
    return T.load(name)


def cycles(module, schedule: bool, keep_faster: bool) -> tuple[int, float]:
    """(simulated cycles, compile seconds) of `module` (not consumed)."""
    from nnx.ir_io import make_context
    from nnx.passes.lower_to_chip import LowerToChipPass, program_cycles

    m = module.clone()
    t0 = time.monotonic()
    LowerToChipPass(schedule=schedule, keep_faster=keep_faster).apply(make_context(), m)
    dt = time.monotonic() - t0
    return program_cycles(m), dt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=DEFAULT)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    rows, slower = [], []
    for name in [m for m in args.models.split(",") if m]:
        try:
            module = load(name)
        except Exception as e:  # noqa: BLE001 - a model that cannot be built here
            print(f"{name}: skipped ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})", flush=True)
            continue
        sf, tsf = cycles(module, False, False)
        st0, tst0 = cycles(module, True, False)
        st, tst = cycles(module, True, True)
        rows.append({"model": name, "sf": sf, "st0": st0, "st": st,
                     "seconds": {"sf": round(tsf, 2), "st0": round(tst0, 2), "st": round(tst, 2)}})
        if st > sf:
            slower.append(name)
        print(f"{name:18s} sf {sf:>10,d} | st0/sf {st0 / sf:.4f} | st/sf {st / sf:.4f} "
              f"| compile s: sf {tsf:.1f} st0 {tst0:.1f} st {tst:.1f}", flush=True)
    print(f"models where the default pipeline is slower than schedule=false: {slower or 'none'}")
    if args.json:
        from nnx.atomic_file import atomic_open

        with atomic_open(args.json) as f:
            json.dump(rows, f, indent=1)
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
