"""tensor-timing is linear: time per op of the timing analysis (and of the memory
timeline) on random layered DAGs of 10K, 100K and 1M ops; the ratio of the time per
op at 1M to the one at 10K stays near 1 (a quadratic analysis would give 100).

    .venv/bin/python bench/tensor_timing_scale.py [--sizes 10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import gc
import random
import time

from nnx.memory_timeline import TimelineOp, TimelineValue, simulate
from nnx.tensor_timing import EXTERNAL, asap_timing


def random_dag(n: int, seed: int = 0):
    """n ops, 1-3 inputs each from the previous 64 ops (or the graph input), like a
    network with skip connections."""
    rng = random.Random(seed)
    delays = [rng.randint(1, 1000) for _ in range(n)]
    preds = []
    for i in range(n):
        k = rng.randint(1, 3)
        preds.append([rng.randint(max(0, i - 64), i - 1) if i else EXTERNAL for _ in range(k)])
    return delays, preds


def best_of(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000,1000000")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    base_t = base_s = None
    print(f"{'ops':>9} {'timing us/op':>13} {'ratio':>6} {'timeline us/op':>15} {'ratio':>6}")
    for n in sizes:
        delays, preds = random_dag(n)
        gc.collect()
        gc.freeze()  # the inputs are not garbage: keep the collector from rescanning them
        t = best_of(lambda: asap_timing(delays, preds), 3 if n < 1_000_000 else 1) / n * 1e6
        values = [TimelineValue(1024) for _ in range(n)]
        ops = [TimelineOp(str(i), "VPU" if i % 3 else "MPU", delays[i],
                          tuple(p for p in preds[i] if p != EXTERNAL), (i,)) for i in range(n)]
        gc.freeze()
        s = best_of(lambda: simulate(ops, values, {"MPU": 1, "VPU": 1}), 3 if n < 1_000_000 else 1) / n * 1e6
        base_t = base_t or t
        base_s = base_s or s
        print(f"{n:>9} {t:>13.2f} {t / base_t:>6.2f} {s:>15.2f} {s / base_s:>6.2f}")


if __name__ == "__main__":
    main()
