"""Sizes of op-split's pieces and the choice of axis and cuts
(docs/topological-order.md, "Operator splitting"; the rules are in op_split.py).

A piece is the op restricted to [lo, hi) along one output axis; its data are the
operand and result shapes its `SplitRule.slices` give. Cuts are balanced (the fewest
pieces of whole granules that fit the threshold). Preference-ordered rules (Conv,
Gemm, MatMul, pooling) take their first axis that can be cut; with `spatial`, the
first whose pieces fit, else two axes together (`_pair_split`), else the finest cut
of the most effective axis; elementwise rules take the axis whose pieces cost the
fewest cycles on the target.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

if TYPE_CHECKING:
    from nnx.passes.op_split import SplitRule


def _shape(v: SSAValue | None) -> tuple[int, ...]:
    return tuple(v.type.get_shape()) if v is not None and isinstance(v.type, TensorType) else ()


def _nbytes(shape: Sequence[int], t) -> int:
    w = getattr(t.element_type, "bitwidth", 32) or 32
    return max(1, int(np.prod(shape, dtype=np.int64)) * w // 8)




def op_bytes(op: Operation) -> int:
    """The op's data: operand (inputs and parameters) and result bytes."""
    total = 0
    for v in list(op.operands) + list(op.results):
        if isinstance(v.type, TensorType):
            total += _nbytes(_shape(v), v.type)
    return total


def piece_shapes(op: Operation, rule: SplitRule, axis: int, lo: int, hi: int) -> list[list[int] | None]:
    """The shapes of the piece [lo, hi) along `axis`: its operands (None: absent) and
    its result."""
    sl, _ = rule.slices(op, axis, lo, hi)
    shapes: list[list[int] | None] = []
    for v, s in zip(op.onnx_inputs(), sl):  # type: ignore[attr-defined]
        shape = None if v is None else list(_shape(v))
        if shape is not None and s is not None:
            shape[s[0]] = s[2] - s[1]
        shapes.append(shape)
    out = list(_shape(op.results[0]))
    out[axis] = hi - lo
    return shapes + [out]


def shapes_bytes(op: Operation, shapes: list[list[int] | None]) -> int:
    """Bytes of a piece of `op` with these operand and result shapes."""
    values = list(op.onnx_inputs()) + [op.results[0]]  # type: ignore[attr-defined]
    return sum(_nbytes(s, v.type) for v, s in zip(values, shapes) if v is not None and s is not None)


def piece_bytes(op: Operation, rule: SplitRule, axis: int, lo: int, hi: int) -> int:
    """The data bytes of the piece [lo, hi) along `axis`."""
    return shapes_bytes(op, piece_shapes(op, rule, axis, lo, hi))


def balanced_cuts(size: int, gran: int, k: int) -> list[tuple[int, int]]:
    """`size` cut into k pieces of whole granules, as equal as possible (a trailing
    partial granule joins the last piece)."""
    units = size // gran
    base, extra = divmod(units, k)
    cuts, lo = [], 0
    for i in range(k):
        hi = lo + (base + (1 if i < extra else 0)) * gran
        cuts.append((lo, hi))
        lo = hi
    cuts[-1] = (cuts[-1][0], size)
    return cuts


def max_pieces(op: Operation, rule: SplitRule, axis: int) -> int:
    """How many pieces `axis` can be cut into: its whole granules."""
    size = _shape(op.results[0])[axis]
    return size // rule.granule.get(axis, 1)


def _representatives(cuts: list[tuple[int, int]]) -> list[int]:
    """Indices of the pieces among which the largest is: balanced cuts have two
    sizes (and a last piece taking a partial granule), and pieces of one size differ
    only at the borders (row pieces: the pads), so the first two of each size and the
    last one cover a border piece and an interior one of every kind."""
    k = len(cuts)
    sizes = [hi - lo for lo, hi in cuts]
    second = next((i for i in range(k) if sizes[i] != sizes[0]), k)
    return sorted({i for i in (0, 1, second, second + 1, k - 1) if i < k})


def largest_piece(op: Operation, rule: SplitRule, axis: int, cuts: list[tuple[int, int]]) -> int:
    """The data bytes of the largest of the pieces `cuts` along `axis`."""
    return max(piece_bytes(op, rule, axis, *cuts[i]) for i in _representatives(cuts))


def pieces_along(op: Operation, rule: SplitRule, axis: int, threshold: int) -> list[tuple[int, int]]:
    """The fewest balanced pieces (whole granules) whose data fit `threshold`; the
    finest such split when none fits ([] when no split into buildable pieces). The
    largest piece shrinks as k grows, so k is found by bisection."""
    size = _shape(op.results[0])[axis]
    gran = rule.granule.get(axis, 1)
    n = max_pieces(op, rule, axis)
    if n < 2:
        return []

    def top(k: int) -> int:
        return largest_piece(op, rule, axis, balanced_cuts(size, gran, k))

    lo, hi = 2, n
    if top(n) > threshold:
        lo = n + 1  # nothing fits: the finest buildable cut
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if top(mid) <= threshold else (mid + 1, hi)
    for k in list(range(lo, n + 1)) + list(range(min(lo, n + 1) - 1, 1, -1)):
        cuts = _valid_cuts(op, rule, axis, k)
        if cuts is not None:
            return cuts
    return []


def _largest_shapes(op: Operation, rule: SplitRule, axis: int, cuts: list[tuple[int, int]]):
    """Per operand and result, the largest extent of every axis over the pieces
    `cuts` (`_representatives`)."""
    res = None
    for i in _representatives(cuts):
        sh = piece_shapes(op, rule, axis, *cuts[i])
        res = sh if res is None else [None if s is None else [max(x, y) for x, y in zip(s, t)]
                                      for s, t in zip(res, sh)]
    return res


def _valid_cuts(op: Operation, rule: SplitRule, axis: int, k: int) -> list[tuple[int, int]] | None:
    """The k balanced cuts along `axis`, None when some piece cannot be built."""
    size = _shape(op.results[0])[axis]
    cuts = balanced_cuts(size, rule.granule.get(axis, 1), k)
    return cuts if rule.cuts_ok(op, axis, cuts) else None


def _pair_split(op: Operation, rule: SplitRule, cands: list[int], threshold: int):
    """Two axes together: the cut (a into k_a pieces, each then cut along b into k_b)
    with the fewest pieces k_a * k_b whose pieces fit `threshold`; returns the first
    axis and its cuts, or None. A piece of both cuts has, per operand, the smaller
    extent of the two (each axis slices other operand axes), so its bytes are known
    without building it."""
    best = None
    for ia, a in enumerate(cands):
        for b in cands:
            if b == a:
                continue
            memo: dict[int, list | None] = {}

            def largest_b(kb: int):
                if kb not in memo:
                    cuts = [(0, _shape(op.results[0])[b])] if kb == 1 else _valid_cuts(op, rule, b, kb)
                    memo[kb] = None if cuts is None else _largest_shapes(op, rule, b, cuts)
                return memo[kb]

            max_b = max_pieces(op, rule, b)
            for ka in range(2, max_pieces(op, rule, a) + 1):
                if best is not None and ka > best[0][0]:
                    break
                cuts_a = _valid_cuts(op, rule, a, ka)
                if cuts_a is None:
                    continue
                la = _largest_shapes(op, rule, a, cuts_a)

                def fits(kb: int) -> bool:
                    lb = largest_b(kb)
                    if lb is None:
                        return False
                    both = [None if x is None else [min(p, q) for p, q in zip(x, y)] for x, y in zip(la, lb)]
                    return shapes_bytes(op, both) <= threshold

                if not fits(max_b):
                    continue
                lo, hi = 1, max_b  # the fewest b pieces that fit (bytes shrink with more pieces)
                while lo < hi:
                    mid = (lo + hi) // 2
                    lo, hi = (lo, mid) if fits(mid) else (mid + 1, hi)
                key = (ka * lo, ka, ia)
                if best is None or key < best[0]:
                    best = (key, a, cuts_a)
    return None if best is None else (best[1], best[2])


def _first_that_fits(op: Operation, rule: SplitRule, cands: list[int], threshold: int):
    """In preference order, the first axis whose pieces fit `threshold` alone; else
    two axes together (`_pair_split`: e.g. row pieces of a conv whose weights alone
    exceed the threshold, each then cut by output channels); else the finest cut of
    the axis whose finest pieces are the smallest (its pieces are examined again).
    Returns (axis, cuts, whether the pieces fit) or None."""
    finest = []
    for a in cands:
        cuts = pieces_along(op, rule, a, threshold)
        if not cuts:
            continue
        top = largest_piece(op, rule, a, cuts)
        if top <= threshold:
            return a, cuts, True
        finest.append((top, a, cuts))
    if not finest:
        return None
    pair = _pair_split(op, rule, [a for _, a, _ in finest], threshold)
    if pair is not None:
        return pair[0], pair[1], True
    _, a, cuts = min(finest, key=lambda t: t[0])  # min() keeps the earliest of equal sizes
    return a, cuts, False


def choose_split(op: Operation, rule: SplitRule, threshold: int, target,
                 spatial: bool = False) -> tuple[int, list[tuple[int, int]]] | None:
    """The axis and pieces of `op` (None when no candidate axis can be split).
    Preference-ordered rules take their first axis that can be cut; with `spatial`,
    the first whose pieces fit (`_first_that_fits`), so a conv whose input alone
    exceeds the threshold is cut by rows rather than into channel pieces that each
    read the whole input."""
    out = _shape(op.results[0])
    cands = [a for a in rule.axes if max_pieces(op, rule, a) >= 2]
    if not cands:
        return None
    if not rule.by_cost:
        if spatial:
            found = _first_that_fits(op, rule, cands, threshold)
            if (found is None or not found[2]) and rule.fine:
                fine = dataclasses.replace(rule, granule={**rule.granule, **rule.fine}, fine=None)
                cands_fine = [a for a in fine.axes if max_pieces(op, fine, a) >= 2]
                found = _first_that_fits(op, fine, cands_fine, threshold) or found
            return None if found is None else (found[0], found[1])
        cuts = pieces_along(op, rule, cands[0], threshold)
        return (cands[0], cuts) if cuts else None
    best = None
    for a in cands:
        cuts = pieces_along(op, rule, a, threshold)
        if not cuts:
            continue
        cycles = 0
        for lo, hi in cuts:
            o = list(out)
            o[a] = hi - lo
            elems = int(np.prod(o, dtype=np.int64))
            nb = piece_bytes(op, rule, a, lo, hi)
            cycles += target.vpu_cycles(elems) + target.dma_cycles(nb)
        key = (cycles, a)
        if best is None or key < best[0]:
            best = (key, a, cuts)
    return None if best is None else (best[1], best[2])
