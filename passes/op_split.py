"""`op-split{threshold=BYTES target=FILE spatial=BOOL}`: split ops whose data exceed
the on-chip memory into ops of the same type over slices (docs/topological-order.md,
"Operator splitting").

An op's data are its operands (inputs and parameters) and its results. When they
exceed `threshold` bytes the op is replaced by k ops of the same type, each computing
a slice of the result along one *output axis* from the matching slices of its
operands (`graph.slice`; a constant operand is sliced into a new constant), joined by
one `graph.concat` along that axis. A piece that still exceeds the threshold is
examined again (the next axis in the preference order splits it further).
`split_to_fit(op, threshold)` does this to one op (the pass runs it on every op; the
package compiler on the ops a program cannot hold).

Which axis (never one that is reduced):

* Conv (plain, grouped, depthwise), Gemm (fc), MatMul: the batch axis first (MatMul:
  its leading axes, then the rows), then the channels (Conv: output channels, whole
  groups at a time; Gemm/MatMul: output columns). Rows, output channels and columns
  are cut at multiples of the interpreter's product blocks (`ROW_BLOCK` rows or
  channels, `COL_BLOCK` columns; nnx/interp/blocked_matmul.py); a Conv with one input
  channel per group is computed tap by tap and cuts anywhere;
* pooling (MaxPool without indices, AveragePool, global pooling) and Resize: batch,
  then channel (the spatial axes are reduced or resized);
* with `spatial=true`, Conv and MaxPool/AveragePool (auto_pad NOTSET) may also cut
  their output rows (axis 2; op_split_spatial.py: each piece reads its input rows
  and a halo, with its own pads): an axis is then taken only if its pieces fit,
  batch, channels, rows in that order; else two axes together (rows x channels when
  the weights alone exceed the threshold); else, for a plain Conv, output channels
  one at a time (op_split_pieces.py);
* Transpose: only axes the permutation keeps in place (a transpose over C and W
  splits batch or H), batch first;
* elementwise ops (unary, broadcasting binary and variadic, Clip and other
  `Elementwise` ops, Softmax-like ops except their `axis`, LRN except the channels,
  LayerNormalization except its normalised axes): the non-reduced axis whose pieces
  cost the fewest cycles by the target's definitions (`Target.vpu_cycles` of each
  piece's elements plus `Target.dma_cycles` of its operand and result bytes; ties:
  the outer axis, whose slices are contiguous);
* every other op is left alone.

The default threshold (`threshold=0`) is the data an op can keep on chip at once: the
neuron, weight and output caches of the target together, less the 1/8 of each that
`lower-to-chip` keeps for its per-op tile slots (7/8 x 3 MiB = 2,752,512 bytes on the
default target).

Results are bit-identical in the interpreter: every output element of a piece is
computed from the same operand elements by the same arithmetic as in the whole op.
Elementwise ops, pooling, Resize and Transpose compute each element on its own; Conv,
Gemm and MatMul compute each element in a BLAS call whose shape and place of the
element do not change when the op is cut at the block granules above
(docs/topological-order.md, "Operator splitting"). The exception is `spatial=true`
on a Conv with several input channels per group: its row pieces (and one-channel
pieces) are smaller BLAS calls over the output positions, exact up to the order of
float summation (within ~1e-6 relative); depthwise and pooling row pieces stay
bit-identical.

    nnx-opt m.mlir -p 'op-split{threshold=1048576}'
    nnx-opt m.mlir -p 'op-split{threshold=1048576 spatial=true}'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError
from nnx.dialects.traits import Elementwise
from nnx.interp.blocked_matmul import COL_BLOCK, ROW_BLOCK
from nnx.passes.op_split_pieces import _shape, choose_split, max_pieces, op_bytes  # noqa: F401 (max_pieces: re-exported)
from nnx.passes.op_split_spatial import ROWS, row_cuts_ok, row_slices

Slice = tuple[int, int, int]  # (axis, start, stop) of an operand; None = whole operand

RESERVED_FRACTION = 8
"""lower-to-chip leaves 1/8 of each cache to its per-op tile slots."""


def default_threshold(target) -> int:
    """Bytes of data an op may have: the three caches, less 1/8 of each."""
    total = sum(c.bytes for c in target.caches)
    return total - total // RESERVED_FRACTION


# --------------------------------------------------------------------------------------
# split rules: candidate output axes and the operand slices of one piece
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitRule:
    """How an op splits: candidate output axes (in preference order, or `by_cost`:
    pick the cheapest), the granularity of each axis, and per piece the operand
    slices and attributes."""

    axes: tuple[int, ...]
    by_cost: bool
    granule: dict[int, int]
    """Pieces along an axis start at multiples of its granule (default 1): the
    interpreter's block sizes for the rows/columns of a matrix product
    (nnx/interp/blocked_matmul.py), whole groups for a grouped Conv."""

    fine: dict[int, int] | None = None
    """With `spatial`: granules to fall back on when no cut at `granule` fits (a
    plain Conv's output channels one at a time: exact up to summation order, as its
    row pieces are)."""

    def slices(self, op: Operation, axis: int, lo: int, hi: int) -> tuple[list[Slice | None], dict]:
        return _aligned_slices(op, axis, lo, hi), {}

    def cuts_ok(self, op: Operation, axis: int, cuts: list[tuple[int, int]]) -> bool:
        """Whether the pieces `cuts` along `axis` can be built (all can but row
        pieces reading no input row or less than a window)."""
        return True


def _aligned_slices(op: Operation, axis: int, lo: int, hi: int) -> list[Slice | None]:
    """Operands aligned with the result from the right (broadcasting): the matching
    axis when it has the result's extent, else the whole operand."""
    out = _shape(op.results[0])
    r = len(out)
    res: list[Slice | None] = []
    for v in op.onnx_inputs():  # type: ignore[attr-defined]
        s = _shape(v)
        j = axis - (r - len(s))
        if v is not None and 0 <= j < len(s) and s[j] == out[axis]:
            res.append((j, lo, hi))
        else:
            res.append(None)
    return res


class WindowRule(SplitRule):
    """Conv and pooling: the rows axis (2) takes the op's input rows and its own pads
    (passes/op_split_spatial.py); batch and channels slice X along the same axis."""

    def slices(self, op, axis, lo, hi):
        if axis == ROWS:
            return row_slices(op, lo, hi)
        return super().slices(op, axis, lo, hi)

    def cuts_ok(self, op, axis, cuts):
        return axis != ROWS or row_cuts_ok(op, cuts)


class ConvRule(WindowRule):
    def slices(self, op, axis, lo, hi):
        w = op.W
        if axis == ROWS:
            return row_slices(op, lo, hi)
        if axis == 0:
            return [(0, lo, hi), None, None], {}
        g = int(op.attr("group", 1) or 1)
        mo = _shape(w)[0] // g
        ci = _shape(w)[1]
        xs = None if g == 1 else (1, lo // mo * ci, hi // mo * ci)
        attrs = {} if g == 1 else {"group": (hi - lo) // mo}
        return [xs, (0, lo, hi), (0, lo, hi) if op.B is not None else None], attrs


class GemmRule(SplitRule):
    def slices(self, op, axis, lo, hi):
        ta, tb = int(op.attr("transA", 0) or 0), int(op.attr("transB", 0) or 0)
        m, n = _shape(op.results[0])
        c = op.C
        cs = _shape(c)
        if axis == 0:
            a = (1 if ta else 0, lo, hi)
            b = None
            cc = (0, lo, hi) if len(cs) == 2 and cs[0] == m else None
        else:
            a = None
            b = (0 if tb else 1, lo, hi)
            cc = ((len(cs) - 1, lo, hi) if cs and cs[-1] == n else None)
        return [a, b, cc if c is not None else None], {}


class MatMulRule(SplitRule):
    def slices(self, op, axis, lo, hi):
        out = _shape(op.results[0])
        r = len(out)
        sa, sb = _shape(op.A), _shape(op.B)
        if axis == r - 2:
            return [(len(sa) - 2, lo, hi), None], {}
        if axis == r - 1:
            return [None, (len(sb) - 1, lo, hi)], {}
        return _aligned_slices(op, axis, lo, hi), {}


class ResizeRule(SplitRule):
    def slices(self, op, axis, lo, hi):
        res = _aligned_slices(op, axis, lo, hi)
        return [res[0]] + [None] * (len(res) - 1), {"__sizes_axis": axis}


def split_rule(op: Operation, spatial: bool = False) -> SplitRule | None:
    """The op's split rule (see the module docstring), None if it is never split.
    `spatial`: Conv and MaxPool/AveragePool also split their output rows (axis 2),
    after batch and channels."""
    from nnx.dialects import graph as G

    if not isinstance(op, G.GraphOp) or len(op.results) != 1 or op.DYNAMIC_RESULT_SHAPE:
        return None
    out = _shape(op.results[0])
    r = len(out)
    if r == 0:
        return None
    if isinstance(op, G.ConvOp) and r >= 3 and op.attr("auto_pad", "NOTSET") in (None, "NOTSET"):
        g = int(op.attr("group", 1) or 1)
        if g > 1:
            channels = _shape(op.W)[0] // g  # whole groups
        else:  # one input channel: tap by tap, else blocks of output channels
            channels = 1 if _shape(op.W)[1] == 1 else ROW_BLOCK
        if not spatial:
            return ConvRule((0, 1), False, {1: channels})
        return ConvRule((0, 1, ROWS), False, {1: channels}, {1: 1} if g == 1 and channels > 1 else None)
    if isinstance(op, G.GemmOp):
        return GemmRule((0, 1), False, {0: ROW_BLOCK, 1: COL_BLOCK})
    if isinstance(op, G.MatMulOp) and len(_shape(op.A)) >= 2 and len(_shape(op.B)) >= 2:
        return MatMulRule(tuple(range(r)), False, {r - 2: ROW_BLOCK, r - 1: COL_BLOCK})
    if isinstance(op, (G.MaxPoolOp, G.AveragePoolOp)) and r >= 3:
        windowed = spatial and op.attr("auto_pad", "NOTSET") in (None, "NOTSET")
        return WindowRule((0, 1, ROWS) if windowed else (0, 1), False, {})
    if isinstance(op, G.GlobalPoolOp) and r >= 3:
        return SplitRule((0, 1), False, {})
    if isinstance(op, G.LayerNormalizationOp):  # graph-fuse's op: the axes before `axis`
        a = int(op.attr("axis", -1))
        return SplitRule(tuple(range(a + r if a < 0 else a)), True, {})
    if isinstance(op, G.ResizeOp) and r >= 3:
        xs = _shape(op.X)
        ok = tuple(a for a in (0, 1) if xs[a] == out[a])
        return ResizeRule(ok, False, {}) if ok else None
    if isinstance(op, G.TransposeOp):
        perm = op.attr("perm") or list(reversed(range(r)))
        return SplitRule(tuple(a for a in range(r) if perm[a] == a), False, {})
    reduced: set[int] = set()
    if isinstance(op, G.AxisUnaryOp):
        a = int(op.attr("axis", -1))
        reduced = {a + r if a < 0 else a}
    elif op.ONNX_TYPE == "LRN":
        reduced = {1}
    elif not isinstance(op, (G.UnaryXOp, G.UnaryInputOp, G.ElementwiseBinaryOp, G.VariadicElementwiseOp)) and not (
            op.has_trait(Elementwise) and all(len(_shape(v)) <= r for v in op.onnx_inputs() if v is not None)):
        return None  # (Elementwise: Clip with its scalar bounds, ...)
    if isinstance(op, G.GlobalPoolOp) or op.results[0].type != getattr(op.onnx_inputs()[0], "type", None):
        if not isinstance(op, (G.ElementwiseBinaryOp, G.VariadicElementwiseOp)):
            return None  # shape-changing unary ops (Flatten, DepthToSpace, ...)
    return SplitRule(tuple(a for a in range(r) if a not in reduced), True, {})


# --------------------------------------------------------------------------------------
# rewriting
# --------------------------------------------------------------------------------------


def _i64(values: Sequence[int]) -> Operation:
    from nnx.dialects.graph import ConstantOp, dense_attr

    return ConstantOp(dense_attr(np.array(list(values), np.int64)))


def _slice_value(v: SSAValue, s: Slice, before: Operation, arrays: dict[int, np.ndarray]) -> SSAValue:
    """`v[lo:hi]` along the axis: a new constant for a constant, else a graph.slice."""
    from nnx.dialects import graph as G
    from nnx.resources import register_array

    axis, lo, hi = s
    block = before.parent_block()
    assert block is not None
    shape = list(_shape(v))
    shape[axis] = hi - lo
    ty = TensorType(v.type.element_type, shape)
    if isinstance(v.owner, G.ConstantOp):
        arr = arrays.get(id(v))
        if arr is None:  # read a (possibly 400 MB) weight once per split op
            arr = arrays[id(v)] = np.asarray(v.owner.numpy_value())
        idx = [slice(None)] * arr.ndim
        idx[axis] = slice(lo, hi)
        part = np.ascontiguousarray(arr[tuple(idx)])
        c = G.ConstantOp(register_array(part, "split") if part.size > 16 else G.dense_attr(part))
        c.location = v.owner.location
        block.insert_op_before(c, before)
        return c.results[0]
    consts = [_i64([lo]), _i64([hi]), _i64([axis])]
    for c in consts:
        block.insert_op_before(c, before)
    sl = G.SliceOp.build_onnx([v] + [c.results[0] for c in consts], {}, [ty])
    sl.location = before.location
    block.insert_op_before(sl, before)
    return sl.results[0]


def split_op(op: Operation, rule: SplitRule, axis: int, cuts: list[tuple[int, int]]) -> list[Operation]:
    """Replace `op` by one op per piece and a concat; returns the pieces."""
    from nnx.dialects import graph as G

    block = op.parent_block()
    assert block is not None
    out_t = op.results[0].type
    out = list(_shape(op.results[0]))
    attrs = op.onnx_attributes()  # type: ignore[attr-defined]
    extra = {k: v for k, v in op.attributes.items() if k.startswith("nnx.")}
    pieces: list[Operation] = []
    arrays: dict[int, np.ndarray] = {}
    for lo, hi in cuts:
        sl, new_attrs = rule.slices(op, axis, lo, hi)
        ins: list[SSAValue | None] = []
        for v, s in zip(op.onnx_inputs(), sl):  # type: ignore[attr-defined]
            ins.append(None if v is None else (v if s is None else _slice_value(v, s, op, arrays)))
        a = dict(attrs)
        sizes_axis = new_attrs.pop("__sizes_axis", None)
        a.update(new_attrs)
        if sizes_axis is not None and len(ins) > 3 and ins[3] is not None:
            sz = np.asarray(ins[3].owner.numpy_value()).copy()  # type: ignore[union-attr]
            sz[sizes_axis] = hi - lo
            c = _i64(sz.tolist())
            block.insert_op_before(c, op)
            ins[3] = c.results[0]
        shape = list(out)
        shape[axis] = hi - lo
        p = type(op).build_onnx(ins, a, [TensorType(out_t.element_type, shape)], list(op.after))  # type: ignore[attr-defined]
        p.attributes.update(extra)
        p.location = op.location
        block.insert_op_before(p, op)
        pieces.append(p)
    cat = G.ConcatOp.build_onnx([p.results[0] for p in pieces], {"axis": axis}, [out_t])
    cat.location = op.location
    block.insert_op_before(cat, op)
    op.results[0].replace_all_uses_with(cat.results[0])
    op.detach()
    op.erase()
    return pieces


def split_to_fit(op: Operation, threshold: int, target=None, spatial: bool = True) -> bool:
    """Split `op` in place in its block until every piece's data (`op_bytes`: operands
    including weights, and results) is at most `threshold` bytes where its rule
    allows: the slices, the pieces and one concat per split (a piece still too big is
    split again along its next axis, down to one output row, one channel or one
    product block). `target` (a `Target`, a target file, or None: the default
    target) prices the pieces of elementwise ops; `spatial` lets Conv and pooling cut
    output rows (module docstring). Returns True when anything was split; ops with no rule, or already
    small enough, are left alone. `op-split` runs this on every op of each function.

        from nnx.passes.op_split import split_to_fit
        split_to_fit(conv_op, 1 << 20)   # the conv's pieces now hold <= 1 MiB each
    """
    if threshold <= 0:
        raise ValueError(f"split_to_fit: threshold={threshold}: must be positive")
    if target is None or isinstance(target, str):
        from nnx.target import load_target

        target = load_target(target or None)
    work = [op]
    changed = False
    while work:
        o = work.pop(0)
        if o.parent_block() is None or op_bytes(o) <= threshold:
            continue
        rule = split_rule(o, spatial)
        if rule is None:
            continue
        choice = choose_split(o, rule, threshold, target, spatial)
        if choice is None:
            continue
        axis, cuts = choice
        work[:0] = split_op(o, rule, axis, cuts)
        changed = True
    return changed


@dataclass(frozen=True)
class OpSplitPass(ModulePass):
    """Split ops whose data exceed `threshold` bytes (0 = from the target's caches)
    into same-type ops over slices joined by concat (module docstring); `spatial`:
    Conv and pooling may also cut their output rows (`split_to_fit`)."""

    name = "op-split"

    threshold: int = 0
    target: str = ""
    spatial: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.dialects import func

        from nnx.target import load_pass_target

        if self.threshold < 0:
            raise PassError(f"op-split: threshold={self.threshold}: must be 0 (from the target) or positive")
        target = load_pass_target("op-split", self.target)
        threshold = self.threshold or default_threshold(target)
        for f in [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]:
            for o in list(f.body.block.ops):
                split_to_fit(o, threshold, target, self.spatial)
