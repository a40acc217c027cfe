"""The trade-off a sweep explored (`nnx-sweep ... --plot out.png|out.svg`;
docs/sweeps.md, "The plot").

One panel per metric (at most `MAX_METRIC_PANELS`): the metric against the first
grid key (the model when there is no grid), one line per model, pipeline and
combination of the other grid keys (colour: the model; line style: the pipeline;
marker: the other grid values); with two metrics or more, one more panel: the first
two metrics against each other, a point per result in its model's colour, and the
Pareto front (no other point is lower in both) as a dashed staircase. Only rows with
status `ok` are drawn; the title counts the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure

from nnx.figures import new_figure

from .spec import SweepSpec

MAX_METRIC_PANELS = 4
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _number(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point is lower-or-equal in both coordinates and lower in
    one (both minimised), sorted by the first coordinate."""
    front: list[tuple[float, float]] = []
    for x, y in sorted(set(points)):
        if not front or y < front[-1][1]:
            front.append((x, y))
    return front


def _pipeline_labels(spec: SweepSpec) -> dict[str, str]:
    return {p: p if len(spec.pipelines) == 1 or p == "default" else f"pipeline {i + 1}"
            for i, p in enumerate(spec.pipelines)}


def sweep_figure(rows: Sequence[dict[str, Any]], spec: SweepSpec, title: str) -> Figure:
    """The figure of a sweep's rows (module docstring)."""
    ok = [r for r in rows if r["status"] == "ok"]
    metrics = list(spec.metrics[:MAX_METRIC_PANELS])
    pareto = len(spec.metrics) >= 2
    n = len(metrics) + pareto
    fig = new_figure(min(5.0 * n, 20.0) + 3.0, 4.8)
    axes = fig.subplots(1, n, squeeze=False)[0]
    grid = list(spec.grid)
    xkey, others = (grid[0], grid[1:]) if grid else ("model", [])
    xs_all = list(spec.grid[xkey]) if grid else [m.name for m in spec.models]
    numeric_x = all(_number(v) is not None for v in xs_all)
    plabel = _pipeline_labels(spec)
    colour = {m.name: f"C{i % 10}" for i, m in enumerate(spec.models)}
    combos = {}
    series: dict[str, list[dict[str, Any]]] = {}
    style: dict[str, dict[str, Any]] = {}
    for r in ok:
        parts = ([] if xkey == "model" else [r["model"]]) + [plabel[r["pipeline"]]]
        parts += [f"{k}={r[k]}" for k in others]
        label = ", ".join(parts)
        series.setdefault(label, []).append(r)
        combo = combos.setdefault(tuple(r[k] for k in others), len(combos))
        style[label] = {"color": "C0" if xkey == "model" else colour[r["model"]],
                        "linestyle": LINE_STYLES[spec.pipelines.index(r["pipeline"]) % len(LINE_STYLES)],
                        "marker": MARKERS[combo % len(MARKERS)]}
    position = {str(v): i for i, v in enumerate(xs_all)}
    for ax, metric in zip(axes, metrics):
        for label, rs in series.items():
            pts = sorted((_number(r[xkey]) if numeric_x else position[str(r[xkey])], _number(r[metric]))
                         for r in rs if _number(r[metric]) is not None)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, alpha=0.85, **style[label])
        if numeric_x:
            ax.set_xticks([_number(v) for v in xs_all], [str(v) for v in xs_all])
        else:
            ax.set_xticks(range(len(xs_all)), [str(v) for v in xs_all], rotation=20)
        ax.set_xlabel(xkey)
        ax.set_ylabel(metric)
        ax.set_title(f"{metric} against {xkey}")
        ax.grid(alpha=0.3)
    if pareto:
        ax = axes[-1]
        mx, my = spec.metrics[0], spec.metrics[1]
        allpts = []
        for m in spec.models:
            pts = [(_number(r[mx]), _number(r[my])) for r in ok if r["model"] == m.name]
            pts = [p for p in pts if None not in p]
            allpts += pts
            if pts:
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=24, alpha=0.8, color=colour[m.name],
                           label=f"model {m.name}")
        front = pareto_front(allpts)
        if front:
            ax.plot([p[0] for p in front], [p[1] for p in front], color="black", lw=1.2, ls="--", drawstyle="steps-post",
                    label="Pareto front")
        ax.set_xlabel(mx)
        ax.set_ylabel(my)
        ax.set_title(f"{my} against {mx} (lower is better)")
        ax.grid(alpha=0.3)
        if allpts:
            ax.legend(fontsize="small", loc="best")
    if series:
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside right upper", fontsize="small", title="series")
    failed = len(rows) - len(ok)
    fig.suptitle(title + (f" ({failed} failed point{'s' * (failed > 1)} not drawn)" if failed else ""))
    named = [f"{plabel[p]}: {p}" for p in spec.pipelines if plabel[p] != p]
    if named:
        fig.supxlabel("; ".join(named), fontsize="small")
    return fig
