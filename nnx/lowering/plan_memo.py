"""A memo of MPU tile plans, for callers that lower the same ops many times.

The cost-based tiling of an MPU op (`compute.plan_mpu`) is the most expensive step of
a lowering, and it is a pure function of what the op looks like at that point: its
tiling rule, its operands' and results' shapes, element types and residency, the
fused epilogue's operands, the buffering depth, the free cache bytes, whether the
program will be list-scheduled, and the target. topo-reorder lowers the same model in
many orders (docs/topological-order.md, "Cost of a candidate order"): an op met again
in the same situation gets the same plan from the memo. The free cache bytes are not
part of the key (they differ from order to order): an entry is the op's
`nnx.tiling.CostPlan`, its candidate tilings with the footprints and times computed
so far, which gives `plan_cost`'s choice for any free bytes.

The tiling of a copy (Concat, Split, Slice: `data_movement.copy`) is remembered the
same way, under `data_movement.copy_key` (a mesh core concatenates pieces cut alike
on many cores).

The memo is off unless a caller enables it (`plan_memo()`); `lower-to-chip` alone
never uses it. An op whose rule holds anything but plain numbers, strings and
containers of them (constant tensors, say) is not memoized.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

MAX_ENTRIES = 8192
"""Plans kept at most (the oldest go first)."""

_MEMO: dict | None = None
_NEW: dict = {}


@contextmanager
def plan_memo(entries: dict | None = None) -> Iterator[dict]:
    """Enable the memo (in this process) for the duration of the block; `entries`:
    the memo to use and extend (default: a fresh one). Yields the memo."""
    global _MEMO
    prev = _MEMO
    _MEMO = {} if entries is None else entries
    try:
        yield _MEMO
    finally:
        _MEMO = prev


def enabled() -> bool:
    """Is the memo on in this process?"""
    return _MEMO is not None


def take_new() -> list:
    """The (key, plan) pairs added or extended since the last call (a worker process
    sends them back to the parent's memo)."""
    global _NEW
    out, _NEW = list(_NEW.items()), {}
    return out


def _frozen(x):
    """A hashable copy of plain data (numbers, strings, tuples, lists, dicts), else
    raises TypeError."""
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, *(_frozen(v) for v in x))
    if isinstance(x, dict):
        return ("dict", *sorted((str(k), _frozen(v)) for k, v in x.items()))
    raise TypeError(type(x).__name__)


def tensor_key(t) -> tuple | None:
    """What of a lowering `Tensor` a plan depends on."""
    return None if t is None else (t.shape, t.dtype, t.resident, t.strides)


def plan_key(rule, srcs, dsts, epilogue_operands, nb: int, schedule: bool, target) -> tuple | None:
    """The memo key of an MPU op's plan, or None (memo off, or not memoizable)."""
    if _MEMO is None:
        return None
    try:
        r = _frozen(vars(rule))
    except TypeError:
        return None
    return (type(rule).__qualname__, r, tuple(tensor_key(s) for s in srcs), tuple(tensor_key(d) for d in dsts),
            tuple(epilogue_operands), nb, schedule, target)


def lookup(key):
    """The memoized `CostPlan` of `key` (None: not memoized)."""
    if key is None or _MEMO is None:
        return None
    return _MEMO.get(key)


def store(key, plan) -> None:
    """Memoize `plan` (a `CostPlan`; the steps it gives are not modified by the
    lowering) under `key`, or record that it was extended."""
    if key is None or _MEMO is None or plan is None:
        return
    if key not in _MEMO and len(_MEMO) >= MAX_ENTRIES:
        del _MEMO[next(iter(_MEMO))]  # the oldest: memory stays bounded on long searches
    _MEMO[key] = plan
    _NEW[key] = plan
