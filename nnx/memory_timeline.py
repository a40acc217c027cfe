"""The graph-level timeline: ops on the target's units, device memory over time.

One model serves the memory profile (`nnx-profile`, `swap-insert{memory-budget=...}`),
the scheduled mode of `tensor-timing`, and any graph-level cost estimate that needs
cycles of an op order (docs/tensor-timing-and-swapping.md, "The device-memory model").
It works on plain data, so it is tested alone and is fast on a million ops;
`nnx.graph_costs.block_timeline` builds that data from a graph-dialect block.

API
---
* `TimelineValue(nbytes, placement, keep=False, alias_of=-1)`: one tensor.
  `placement`: "device" (allocated when its producer starts, freed when its last
  reader finishes; a value nobody reads is freed when its producer finishes),
  "resident" (device memory for the whole run: parameters, gradients and optimizer
  state held as constants or arguments), or "host" (a swap-out's host copy: no device
  memory). `keep`: a graph result, never freed. `alias_of`: a view (reshape...) of
  another value: no memory of its own, its readers keep the aliased value alive.
* `TimelineOp(name, unit, cycles, reads, writes, after=(), inplace=())`: one op.
  `unit` is a unit kind of the `units` mapping ("" = no unit: starts as soon as its
  inputs are ready, takes `cycles`); `reads`/`writes` are value indices; `after` are
  op indices that must finish before it starts (control edges); `inplace` are values
  among `reads` whose buffer the op writes its result into: as a reader, it frees
  them at its start instead of its finish (nnx/memory_rules.py).
* `simulate(ops, values, units, order=None) -> Timeline`: runs the ops in `order`
  (default: list order, which must be topological). Each op waits for its unit kind's
  earliest-free instance (in-order queues, `units[kind]` instances) and for the
  producers of what it reads and its `after` ops; it then runs `cycles`. Device
  memory: every op's device outputs are allocated at its start; a value is freed at
  the finish of its last reader. At one instant frees come before allocations. A
  swap-out (an op reading a device value and writing a host value) therefore frees
  the device copy when the copy completes; a swap-in allocates when it starts; a
  compression holds input and output at once (its transient peak).

`alias_root(values, v)` is the value whose memory `v` uses (following `alias_of`).

`Timeline` holds start/finish per op, the makespan (`cycles`), `peak_bytes`, the time
and op of the peak, the memory curve as (time, bytes) steps, and `link_busy_cycles`
(the summed cycles of ops on `link_units`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

PLACEMENTS = ("device", "resident", "host")


@dataclass(frozen=True)
class TimelineValue:
    """One tensor (see the module docstring)."""

    nbytes: int
    placement: str = "device"
    keep: bool = False
    alias_of: int = -1


@dataclass(frozen=True)
class TimelineOp:
    """One op (see the module docstring)."""

    name: str
    unit: str
    cycles: int
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    after: tuple[int, ...] = ()
    inplace: tuple[int, ...] = ()


@dataclass
class Timeline:
    """The result of `simulate`."""

    start: list[int]
    finish: list[int]
    cycles: int
    peak_bytes: int
    peak_time: int
    peak_op: int
    resident_bytes: int
    link_busy_cycles: int
    curve: list[tuple[int, int]] = field(default_factory=list)

    def fits(self, capacity: int) -> bool:
        return self.peak_bytes <= capacity


def alias_root(values: Sequence[TimelineValue], v: int) -> int:
    """The value whose memory `v` uses: follows `alias_of` to a value that aliases nothing."""
    seen = 0
    while values[v].alias_of >= 0:
        v = values[v].alias_of
        seen += 1
        if seen > len(values):
            raise ValueError("alias cycle among timeline values")
    return v


def simulate(ops: Sequence[TimelineOp], values: Sequence[TimelineValue], units: Mapping[str, int],
             order: Sequence[int] | None = None, link_units: Iterable[str] = ("D2H", "H2D", "LINK")) -> Timeline:
    """Run the ops on the units and track device memory (see the module docstring)."""
    n = len(ops)
    seq = range(n) if order is None else order
    producer = [-1] * len(values)
    for i, op in enumerate(ops):
        for v in op.writes:
            producer[v] = i
    root = [alias_root(values, v) if values[v].alias_of >= 0 else v for v in range(len(values))]
    free_at: dict[str, list[int]] = {k: [0] * max(c, 1) for k, c in units.items()}
    start = [0] * n
    finish = [0] * n
    done = [False] * n
    link = set(link_units)
    link_busy = 0
    for i in seq:
        op = ops[i]
        t = 0
        for v in op.reads:
            p = producer[v]
            if p >= 0:
                if not done[p]:
                    raise ValueError(f"op {op.name!r} reads a value produced later in the order")
                t = max(t, finish[p])
        for p in op.after:
            if not done[p]:
                raise ValueError(f"op {op.name!r} comes before its 'after' op in the order")
            t = max(t, finish[p])
        if op.unit:
            if op.unit not in free_at:
                raise ValueError(f"op {op.name!r} runs on unknown unit {op.unit!r}")
            lanes = free_at[op.unit]
            k = min(range(len(lanes)), key=lanes.__getitem__)
            t = max(t, lanes[k])
            lanes[k] = t + op.cycles
            if op.unit in link:
                link_busy += op.cycles
        start[i] = t
        finish[i] = t + op.cycles
        done[i] = True
    if not all(done):
        raise ValueError("the order does not cover every op")
    end = max(finish, default=0)

    # device memory: (time, kind 0=free 1=alloc, bytes, op)
    last_read = [-1] * len(values)
    for i, op in enumerate(ops):
        for v in op.reads:
            r = root[v]
            t = start[i] if v in op.inplace else finish[i]
            if t > last_read[r]:
                last_read[r] = t
    resident = 0
    events: list[tuple[int, int, int, int]] = []
    for v, val in enumerate(values):
        if val.alias_of >= 0 or val.placement == "host":
            continue
        if val.placement == "resident":
            resident += val.nbytes
            continue
        p = producer[v]
        t0 = start[p] if p >= 0 else 0
        events.append((t0, 1, val.nbytes, p))
        if not val.keep:
            t1 = last_read[v] if last_read[v] >= 0 else (finish[p] if p >= 0 else 0)
            events.append((max(t1, t0), 0, -val.nbytes, p))
    events.sort(key=lambda e: (e[0], e[1]))
    cur = resident
    peak, peak_t, peak_op = resident, 0, -1
    curve = [(0, resident)]
    for t, kind, b, p in events:
        cur += b
        if kind == 1 and cur > peak:
            peak, peak_t, peak_op = cur, t, p
        if curve[-1][0] == t:
            curve[-1] = (t, cur)
        else:
            curve.append((t, cur))
    return Timeline(start, finish, end, peak, peak_t, peak_op, resident, link_busy, curve)


def working_set_floor(ops: Sequence[TimelineOp], values: Sequence[TimelineValue],
                      may_reuse: Sequence[bool] | None = None) -> tuple[int, int]:
    """A lower bound on the peak of any schedule of `ops` that keeps their data
    (whatever is moved to the host or compressed in between): the largest, over the
    ops, of what one op holds while it runs (its device inputs and outputs) plus the
    resident bytes and the kept values produced up to it; and the index of that op
    (-1 when there is none). An op of `may_reuse` (or one already `inplace`) may
    write its result into an input of the result's size (a restored copy it reads
    last), so that input counts once."""
    root = [alias_root(values, v) if values[v].alias_of >= 0 else v for v in range(len(values))]
    resident = sum(v.nbytes for v in values if v.placement == "resident" and v.alias_of < 0)
    producer = {w: i for i, op in enumerate(ops) for w in op.writes}
    kept = 0
    best, where = resident, -1
    for i, op in enumerate(ops):
        held = {root[w] for w in op.writes} | {root[v] for v in op.reads}
        for w in op.writes:
            if values[root[w]].keep and producer.get(root[w]) == i:
                kept += values[root[w]].nbytes
        size = sum(values[r].nbytes for r in held
                   if values[r].placement == "device" and not values[r].keep)
        if op.writes and (op.inplace or (may_reuse is not None and may_reuse[i])):
            out = values[root[op.writes[0]]].nbytes
            if any(values[root[v]].nbytes == out and values[root[v]].placement == "device" for v in op.reads):
                size -= out
        if resident + kept + size > best:
            best, where = resident + kept + size, i
    return best, where
