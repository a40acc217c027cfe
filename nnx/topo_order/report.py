"""What the search did, for people: a JSON report, a DOT view, a Gantt chart.

* `report_dict(result)`: per subgraph its ops, the number of topological orders
  (exact up to max-orders, else ">N"), the orders tried with their costs, the best
  cost and the search time; the whole-model check's cycles per candidate;
* `write_dot(path, result)`: the op graph, key nodes filled, one cluster per subgraph;
* `gantt_figure(timelines, units, title)` / `write_gantt(path, ...)`: the units'
  busy intervals (one row per unit, colour per subgraph, legend) with the subgraph
  boundaries as vertical lines, as PNG or SVG (docs/pictures.md).

Every file is written atomically (nnx/atomic_file.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import matplotlib

from nnx.atomic_file import atomic_open
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


def gantt_figure(timelines: Sequence[Sequence[tuple[str, int, int, int]]],
                 units: Sequence[str], title: str):
    """The Gantt chart of busy intervals: `timelines[k]` are subgraph k's (unit,
    start, end, _) intervals on one clock, subgraphs one after another. One row per
    unit, one bar collection per subgraph (labelled `subgraph k`, its own colour,
    in the legend), a dashed vertical line where each subgraph ends."""
    from nnx.figures import new_figure

    fig = new_figure(12.0, 1.2 + 0.45 * len(units))
    ax = fig.subplots()
    cmap = matplotlib.colormaps["tab10"]
    ends = [max((e for _, _, e, _ in tl), default=0) for tl in timelines]
    for k, tl in enumerate(timelines):
        for row, u in enumerate(units):
            spans = [(s, e - s) for uu, s, e, _ in tl if uu == u]
            ax.broken_barh(spans, (row - 0.4, 0.8), facecolors=cmap(k % 10), edgecolors=cmap(k % 10),
                           linewidth=0.4, label=f"subgraph {k}" if row == 0 else f"_subgraph {k}")
    for b in ends:
        ax.axvline(b, color="black", lw=0.6, ls="--")
    ax.set_xlim(0, max(ends + [1]))
    ax.set_ylim(len(units) - 0.5, -0.5)
    ax.set_yticks(range(len(units)), list(units))
    ax.set_xlabel("time (cycles)")
    ax.set_ylabel("unit")
    ax.set_title(title)
    if len(timelines) <= 24:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", title="colour")
    return fig


def write_gantt(path: str, timelines: Sequence[Sequence[tuple[str, int, int, int]]],
                units: Sequence[str], title: str) -> None:
    """Write `gantt_figure` to `path` (PNG or SVG by its extension), atomically."""
    from nnx.figures import save_figure

    save_figure(gantt_figure(timelines, units, title), path, "gantt")
