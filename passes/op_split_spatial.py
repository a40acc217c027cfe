"""Row (spatial) pieces of sliding-window ops for `op-split{spatial=true}`
(docs/topological-order.md, "Operator splitting").

A piece of a Conv, MaxPool or AveragePool computes the output rows [a, b) (axis 2 of
N, C, H, ...: the first spatial axis). Along that axis the op has kernel extent
dk = (k - 1) * d + 1, stride s, pads pt (top) and pe (bottom), input rows H. In
*padded* coordinates (row 0 = the first top pad row) output row o reads the rows
[o*s, o*s + dk), so the piece reads

    R0 = a*s,  R1 = (b - 1)*s + dk

of which

* input rows [max(0, R0 - pt), min(H, R1 - pt)) -- the piece's slice of X (its halo
  is the dk - s rows two neighbouring pieces both read);
* its own top pad: max(0, pt - R0) rows (non-zero only for pieces that start within
  pt rows of the top border);
* its own bottom pad: the rows of [R0, R1) inside the explicit bottom pad
  [pt + H, pt + H + pe);
* with ceil_mode, the last window may overhang past the explicit bottom pad by up to
  s - 1 rows; a piece keeping ceil_mode=1 reads the same overhang and still gets
  exactly b - a rows (the ceil rounds the overhang in, and the start of its last
  window, (b - 1)*s, lies inside pt + H as it does in the whole op). MaxPool and
  AveragePool without count_include_pad write the overhang as bottom pad instead
  (-inf, or not counted, either way), so their pieces hold whole windows; an
  AveragePool piece with count_include_pad must (`row_cuts_ok`).

Every output element of the piece therefore reads the same input elements and the
same pad positions, at the same kernel taps, as in the whole op; AveragePool counts
the same elements (count_include_pad=1 counts explicit pads but never the ceil
overhang, in the piece as in the whole op).
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

ROWS = 2
"""The axis row pieces cut: H of N, C, H, W (the first spatial axis)."""


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape()) if isinstance(v.type, TensorType) else ()


def row_geometry(op: Operation) -> tuple[int, int, int, int, int]:
    """(dk, s, pt, pe, H) of the op's first spatial axis: dilated kernel extent,
    stride, top and bottom pads, input rows."""
    from nnx.dialects import graph as G

    x = op.onnx_inputs()[0]  # type: ignore[attr-defined]
    r = len(_shape(x)) - 2
    if isinstance(op, G.ConvOp):
        k = _shape(op.W)[2]
    else:
        k = int(op.attr("kernel_shape")[0])  # type: ignore[attr-defined]
    strides = op.attr("strides") or [1] * r  # type: ignore[attr-defined]
    dil = op.attr("dilations") or [1] * r  # type: ignore[attr-defined]
    pads = op.attr("pads") or [0] * (2 * r)  # type: ignore[attr-defined]
    return (k - 1) * int(dil[0]) + 1, int(strides[0]), int(pads[0]), int(pads[r]), _shape(x)[2]


def _overhang_is_pad(op: Operation) -> bool:
    """Whether rows read past the explicit bottom pad (ceil_mode) may be written as
    more bottom pad: MaxPool pads with -inf either way; AveragePool without
    count_include_pad counts neither."""
    from nnx.dialects import graph as G

    if isinstance(op, G.MaxPoolOp):
        return True
    return isinstance(op, G.AveragePoolOp) and not int(op.attr("count_include_pad", 0) or 0)


def row_window(op: Operation, a: int, b: int, geometry=None) -> tuple[int, int, int, int, int]:
    """(in_lo, in_hi, pad_top, pad_bottom, overhang) of the piece computing output
    rows [a, b) (module docstring); the overhang is already counted in pad_bottom
    where `_overhang_is_pad`. `geometry`: `row_geometry(op)` and `_overhang_is_pad(op)`
    when already known."""
    dk, s, pt, pe, h, overhang_is_pad = geometry or (*row_geometry(op), _overhang_is_pad(op))
    r0, r1 = a * s, (b - 1) * s + dk
    in_lo, in_hi = max(0, r0 - pt), min(h, r1 - pt)
    top = max(0, min(r1, pt) - r0)
    bottom = max(0, min(r1, pt + h + pe) - max(r0, pt + h))
    overhang = max(0, r1 - max(r0, pt + h + pe))
    if overhang and overhang_is_pad:
        bottom, overhang = bottom + overhang, 0
    return in_lo, in_hi, top, bottom, overhang


def row_cuts_ok(op: Operation, cuts: list[tuple[int, int]]) -> bool:
    """Every piece [a, b) of `cuts` reads at least one input row, and its input with
    its explicit pads holds one whole window (ONNX, and the verifier, reject a smaller
    padded input even with ceil_mode: a one-row AveragePool piece with
    count_include_pad whose window overhangs the bottom pad is refused, and the split
    takes fewer pieces)."""
    geometry = (*row_geometry(op), _overhang_is_pad(op))
    dk = geometry[0]
    for a, b in cuts:
        in_lo, in_hi, top, bottom, _ = row_window(op, a, b, geometry)
        if in_hi <= in_lo or in_hi - in_lo + top + bottom < dk:
            return False
    return True


def row_slices(op: Operation, a: int, b: int) -> tuple[list, dict]:
    """Operand slices (X: its input rows; weights and bias whole) and the new `pads`
    of the piece computing output rows [a, b)."""
    x = op.onnx_inputs()[0]  # type: ignore[attr-defined]
    r = len(_shape(x)) - 2
    in_lo, in_hi, top, bottom, _ = row_window(op, a, b)
    pads = list(op.attr("pads") or [0] * (2 * r))  # type: ignore[attr-defined]
    pads[0], pads[r] = top, bottom
    n_in = len(op.onnx_inputs())  # type: ignore[attr-defined]
    return [(ROWS, in_lo, in_hi)] + [None] * (n_in - 1), {"pads": pads}
