"""Picture of device memory over time (`nnx-profile ... --plot mem.png|mem.svg`;
docs/tensor-timing-and-swapping.md, "The device-memory model"; docs/pictures.md).

Each curve is a step function of (cycle, bytes) points (`nnx.memory_timeline.Timeline.curve`),
drawn in MiB against milliseconds at the target's clock; the device capacity is a
dashed red line when it is within twice the highest curve (a small graph on a large
device stays readable), else the legend states it as off the scale.
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure

from nnx.figures import new_figure

MIB = float(1 << 20)


def memory_figure(curves: Sequence[Sequence[tuple[int, int]]], names: Sequence[str], capacity: int,
                  clock_hz: int, title: str) -> Figure:
    """Device memory over time: one step curve per (name, curve), the last one in
    front (blue), earlier ones grey; the capacity as a line or a legend entry."""
    fig = new_figure(10.0, 5.0)
    ax = fig.subplots()
    ms = 1e3 / clock_hz
    t_end = max((t for c in curves for t, _ in c), default=0)
    peak = max((b for c in curves for _, b in c), default=0)
    for k, (c, name) in enumerate(zip(curves, names)):
        last = k == len(curves) - 1
        ts = [t * ms for t, _ in c] + [t_end * ms]
        bs = [b / MIB for _, b in c]
        bs.append(bs[-1] if bs else 0.0)
        ax.step(ts, bs, where="post", color="tab:blue" if last else "0.55", lw=1.6 if last else 1.2,
                label=f"{name} (peak {max((b for _, b in c), default=0) / MIB:,.1f} MiB)", zorder=3 if last else 2)
    cap_label = f"device memory {capacity / MIB:,.0f} MiB"
    top = peak
    if capacity <= 2 * peak:
        ax.axhline(capacity / MIB, color="tab:red", ls="--", lw=1.2, label=cap_label)
        top = max(top, capacity)
    else:
        ax.plot([], [], color="tab:red", ls="--", label=cap_label + " (off the scale)")
    ax.set_xlim(0, max(t_end * ms, 1e-9))
    ax.set_ylim(0, max(top, 1) * 1.1 / MIB)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("device memory (MiB)")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    ax.set_title(title)
    return fig
