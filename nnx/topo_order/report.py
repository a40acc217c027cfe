"""What the search did, for people: a JSON report, a DOT view, a Gantt chart.

* `report_dict(result)`: per subgraph its ops, the number of topological orders
  (exact up to max-orders, else ">N"), the orders tried with their costs, the best
  cost and the search time; the whole-model check's cycles per candidate;
* `write_dot(path, result)`: the op graph, key nodes filled, one cluster per subgraph;
* `write_gantt(path, timelines, units)`: the units' busy intervals (one row per unit,
  colour per subgraph) with the subgraph boundaries as vertical lines, as a PNG
  (matplotlib when installed, else the PNG writer of nnx/topology/plot.py).

Every file is written atomically (nnx/atomic_file.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from nnx.atomic_file import atomic_open, atomic_path
from nnx.topo_order.search import SearchResult

MAX_LISTED = 32
"""Most orders listed per subgraph in the report (the count is always given)."""


def op_label(op) -> str:
    """`kind@location` of an op (its ONNX node name when imported)."""
    from nnx.interp.interpreter import location_text

    kind = getattr(op, "ONNX_TYPE", op.name)
    loc = location_text(op).strip('"')
    return f"{kind}@{loc}" if loc else kind


def report_dict(result: SearchResult) -> dict:
    dag = result.dag
    subs = []
    for k, s in enumerate(result.subgraphs):
        subs.append({
            "index": k,
            "ops": [op_label(dag.ops[i]) for i in s.nodes],
            "key_node": None if s.key is None else op_label(dag.ops[s.key]),
            "topological_orders": s.orders_total,
            "orders_tried": len(s.tried),
            "tried": [dict(t, order=[int(v) for v in t["order"]]) for t in s.tried[:MAX_LISTED]],
            "best_cost": s.best_cost,
            "best_order": s.best_order,
            "changed": s.best_order != sorted(s.best_order),
            "search_seconds": round(s.seconds, 4),
        })
    return {
        "ops": len(dag),
        "key_nodes": [op_label(dag.ops[i]) for i in result.keys],
        "subgraphs": subs,
        "whole_model_cycles": result.whole,
        "chosen": result.chosen,
        "random_whole_orders_compiled": result.verified_random,
        "local_search_orders_compiled": result.local_searched,
        "order_changed": list(result.order) != list(range(len(dag))),
        "compiled": result.compiled,
        "cache_hits": result.cache_hits,
        "search_seconds": round(result.seconds, 3),
    }


def write_report(path: str, result: SearchResult) -> None:
    with atomic_open(path) as f:
        json.dump(report_dict(result), f, indent=1)
        f.write("\n")


def write_dot(path: str, result: SearchResult) -> None:
    """Graphviz text: ops as boxes (key nodes filled), a cluster per subgraph."""
    dag = result.dag
    keys = set(result.keys)
    pos = {v: k for k, v in enumerate(result.order)}
    lines = ["digraph topo {", "  rankdir=TB;", '  node [shape=box, fontsize=10];']
    for k, part in enumerate(result.parts):
        lines.append(f"  subgraph cluster_{k} {{")
        lines.append(f'    label="subgraph {k}"; style=dashed;')
        for v in part:
            label = op_label(dag.ops[v]).replace('"', "'")
            style = ', style=filled, fillcolor="#f4b942"' if v in keys else ""
            lines.append(f'    n{v} [label="{label}\\n#{pos.get(v, v)}"{style}];')
        lines.append("  }")
    for v, ps in enumerate(dag.preds):
        for p in ps:
            lines.append(f"  n{p} -> n{v};")
    lines.append("}")
    with atomic_open(path) as f:
        f.write("\n".join(lines) + "\n")


_PALETTE = np.array([[66, 133, 244], [219, 68, 55], [244, 180, 0], [15, 157, 88],
                     [171, 71, 188], [0, 172, 193], [255, 112, 67], [158, 157, 36]], np.uint8)


def write_gantt(path: str, timelines: Sequence[Sequence[tuple[str, int, int, int]]],
                units: Sequence[str], title: str = "") -> None:
    """PNG of busy intervals; `timelines[k]` are subgraph k's (unit, start, end, _)
    intervals on one clock, subgraphs one after another."""
    bounds = [max((e for _, _, e, _ in tl), default=0) for tl in timelines]
    total = max(bounds + [1])
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    if plt is not None:
        fig, ax = plt.subplots(figsize=(12, 0.6 * len(units) + 1))
        for k, tl in enumerate(timelines):
            col = _PALETTE[k % len(_PALETTE)] / 255.0
            for u, s, e, _ in tl:
                ax.barh(units.index(u), e - s, left=s, color=col, height=0.8)
        for b in bounds:
            ax.axvline(b, color="black", lw=0.5)
        ax.set_yticks(range(len(units)), units)
        ax.set_xlabel("cycles")
        ax.set_title(title)
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=100)
        plt.close(fig)
        return
    from nnx.png import write_png

    width, row = 1600, 24
    img = np.full((row * len(units) + 8, width, 3), 255, np.uint8)
    scale = (width - 1) / total
    for k, tl in enumerate(timelines):
        col = _PALETTE[k % len(_PALETTE)]
        for u, s, e, _ in tl:
            r = units.index(u)
            x0, x1 = int(s * scale), max(int(s * scale) + 1, int(e * scale))
            img[r * row + 3:(r + 1) * row - 3, x0:x1] = col
    for b in bounds:
        img[:, min(int(b * scale), width - 1)] = 0
    for r in range(1, len(units)):
        img[r * row, :] = 200
    with atomic_path(path) as tmp:
        write_png(tmp, img)
