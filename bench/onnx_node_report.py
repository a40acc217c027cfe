"""Pass counts of the ONNX backend node tests through nnx-import + the interpreter.

Usage: .venv/bin/python bench/onnx_node_report.py [--markdown] [--all-failures]

Runs every node test whose ops are all supported (see
nnx/interp/onnx_node_tests.py), prints a table of passes per op (a test counts for
each op it uses), the total, the total over tests using only the ops issue 2
requires (the 95% target), and the failures with their reasons.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nnx.interp import onnx_node_tests as T  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    node_dir = T.ensure_data()
    all_cases = T.list_cases(node_dir)
    cases = T.selected_cases(node_dir)
    per_op: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    failures: list[tuple[str, str]] = []
    req = [0, 0]
    req_typed = [0, 0]  # excluding element types nnx.types lacks
    t0 = time.perf_counter()
    for c in cases:
        try:
            why = T.check_case(c)
        except Exception as e:  # noqa: BLE001
            why = f"crash: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        ok = why is None
        for op in c.ops:
            per_op[op][0] += ok
            per_op[op][1] += 1
        if T.is_required(c):
            req[0] += ok
            req[1] += 1
            if ok or not why.startswith("unsupported element type"):
                req_typed[0] += ok
                req_typed[1] += 1
        if not ok:
            failures.append((c.name, why))
    dt = time.perf_counter() - t0
    total_ok = len(cases) - len(failures)
    if args.markdown:
        print("| op | passed | run |")
        print("|---|---:|---:|")
        for op in sorted(per_op):
            p, n = per_op[op]
            print(f"| {op} | {p} | {n} |")
    else:
        for op in sorted(per_op):
            p, n = per_op[op]
            print(f"{op:28s} {p:4d} / {n:4d}")
    print()
    print(f"node tests generated: {len(all_cases)}; run (all ops supported): {len(cases)}")
    print(f"passed: {total_ok} / {len(cases)} ({100.0 * total_ok / max(len(cases), 1):.1f}%)")
    print(
        f"tests using only issue 2's required ops: {req[0]} / {req[1]} "
        f"({100.0 * req[0] / max(req[1], 1):.1f}%)"
    )
    print(
        "  of which use element types nnx.types has (all but string): "
        f"{req_typed[0]} / {req_typed[1]} "
        f"({100.0 * req_typed[0] / max(req_typed[1], 1):.1f}%)"
    )
    print(f"time: {dt:.1f} s")
    if failures:
        print("\nfailures:")
        for name, why in failures:
            print(f"  {name}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
