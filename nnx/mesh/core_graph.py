"""The graph function of one stage (docs/mesh.md, "Compilation").

A stage's function takes the graph inputs (or the slices of them it loads) and the
received pieces it reads as arguments and returns the pieces other stages read (and
the graph outputs, or slices of them, it produces) as results; the per-core chip
program is this function lowered by the single-core chip passes. Split op parts get
the slices of their weights (the parts of a 2-D split a block of them, and the running
sum of their output piece from the part before in its chain); a full value made of
pieces received from several stages is rebuilt by `concat` (output and 2-D splits) or
a sum (table-row splits).

Message names: a value is `v{op}r{result}`, its piece j `v{op}r{result}p{j}`; they are
the argument/result names of the stage functions and the tags of the NoC messages.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue

from nnx.dialects import graph as g
from nnx.graph_queries import const_value, constant_op
from nnx.mesh.partition import RETURN, BlockSplit, Plan, Split, covered_pieces, shape, window_pieces
from nnx.mesh.rows import ROW_AXIS, is_row_view, part_attributes, row_window, windowed_operands
from nnx.mesh.tile_splits import CHANNEL_AXIS, TileSplit
from nnx.resources import register_array
from nnx.sim.asm_mesh import IOSlice


#: (op index, result index, part or None), or with a fourth item (lo, hi, axis):
#: rows [lo, hi) (along `axis`, absolute) of that piece, which its stage sends sliced
Piece = tuple


def piece_name(p: Piece) -> str:
    i, r, j = p[:3]
    name = f"v{i}r{r}" + ("" if j is None else f"p{j}")
    if len(p) == 4:
        lo, hi, axis = p[3]
        name += f"w{lo}_{hi}" + ("" if axis == ROW_AXIS else f"a{axis}")
    return name


@dataclass
class StageIO:
    """What a stage reads from elsewhere (`recv`: piece -> source stage), which graph
    inputs it reads, and what it sends (`send`: piece -> destination stages)."""

    recv: dict[Piece, int] = field(default_factory=dict)
    graph_inputs: list[int] = field(default_factory=list)
    send: dict[Piece, list[int]] = field(default_factory=dict)
    outputs: dict[Piece, str] = field(default_factory=dict)  # piece -> graph output name
    #: arguments and results that are a slice of a graph input or output: stage
    #: function name -> (graph name, slice) (docs/mesh.md, "Inputs and outputs");
    #: output slices are set by `stage_io`, input slices by `build_stage_module`
    slices: dict[str, tuple[str, IOSlice]] = field(default_factory=dict)


def _result_index(v: SSAValue) -> int:
    return v.index  # type: ignore[attr-defined]


class _Producers:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.index = {id(op): i for i, op in enumerate(plan.ops)}

    def of(self, v: SSAValue) -> int | None:
        owner = v.owner
        return self.index.get(id(owner)) if isinstance(owner, Operation) else None

    def pieces(self, v: SSAValue, part: int | None) -> list[Piece]:
        """The pieces an item reads of activation `v`: piece `part`, or all of them."""
        p = self.of(v)
        r = _result_index(v)
        sp = self.plan.splits.get(p)
        if sp is None:
            return [(p, r, None)]
        if part is not None:
            return [(p, r, part)]
        return [(p, r, j) for j in range(sp.k)]

    def reduce_pieces(self, v: SSAValue, sp: Split, part: int) -> list[Piece]:
        """The pieces of `v` that part `part` of a reduction split `sp` reads."""
        p = self.of(v)
        return [(p, _result_index(v), q)
                for q in covered_pieces(self.plan.splits[p], sp.bounds[part], sp.bounds[part + 1])]

    def stage_of(self, piece: Piece) -> int:
        return self.plan.where[(piece[0], piece[2])]

    def window(self, v: SSAValue, a: int, b: int, axis: int) -> list[Piece]:
        """The pieces holding rows [a, b) (along `axis`) of activation `v` (see
        `partition.window_pieces`); a piece only partly inside is a windowed piece."""
        p = self.of(v)
        r = _result_index(v)
        out = []
        for q, lo, hi, whole in window_pieces(self.plan.splits.get(p), shape(v)[axis], a, b, axis):
            out.append((p, r, q) if whole else (p, r, q, (lo, hi, axis)))
        return out


def item_reads(plan: Plan, prod: _Producers, item, returned: list[SSAValue]):
    """(graph input arg numbers, pieces) an item reads."""
    i, part = item
    if i == RETURN:
        vals, follow = [returned[part]], False
    else:
        vals = [v for v in plan.ops[i].operands if constant_op(v) is None]
        follow = plan.kinds[i] == "follow"
    args, pieces = [], []
    win = {}
    if i != RETURN and plan.kinds[i] in ("rows", "tile"):
        sp = plan.splits[i]
        lo, hi = sp.extent(part, ROW_AXIS) if isinstance(sp, TileSplit) else sp.bounds[part:part + 2]
        a, b, _, _ = row_window(plan.ops[i], lo, hi)
        axis = plan.row_inputs.get(i, ROW_AXIS)
        win = {id(plan.ops[i].operands[k]): (a, b, axis) for k in windowed_operands(plan.ops[i])}
    for v in vals:
        if prod.of(v) is None:
            args.append(v.index)  # a block argument of @main
        elif id(v) in win:
            pieces.extend(prod.window(v, *win[id(v)]))
        elif i != RETURN and plan.kinds[i] == "block":  # its input range, along the reduction axis
            blk = plan.blocks[i]
            r, _ = blk.coords(part)
            pieces.extend(prod.window(v, blk.inputs.bounds[r], blk.inputs.bounds[r + 1], blk.inputs.axis))
        elif i != RETURN and plan.kinds[i] == "reduce" and not isinstance(plan.ops[i], g.GatherOp):
            pieces.extend(prod.reduce_pieces(v, plan.reductions[i], part))
        else:
            pieces.extend(prod.pieces(v, part if follow else None))
    if i != RETURN and plan.kinds[i] == "reduce" and part > 0:
        pieces.append((i, 0, part - 1))  # the running sum of the parts before
    if i != RETURN and plan.kinds[i] == "block":
        r, j = plan.blocks[i].coords(part)
        if r > 0:  # the running sum of output piece j over the input ranges before
            pieces.append((i, 0, plan.blocks[i].part(r - 1, j)))
    return args, pieces


def stage_io(plan: Plan, returned: list[SSAValue], out_names: list[str]) -> list[StageIO]:
    """The reads and sends of every stage."""
    prod = _Producers(plan)
    ios = [StageIO() for _ in plan.stages]
    for s in plan.stages:
        whole: set = set()  # pieces received whole so far: a band of one is sliced here (_Builder.window_piece)
        for item in s.items:
            args, pieces = item_reads(plan, prod, item, returned)
            for a in args:
                if a not in ios[s.index].graph_inputs:
                    ios[s.index].graph_inputs.append(a)
            for pc in pieces:
                src = prod.stage_of(pc)
                if len(pc) == 3:
                    whole.add(pc)
                elif pc[:3] in whole:
                    continue
                if src != s.index:
                    ios[s.index].recv[pc] = src
                    dsts = ios[src].send.setdefault(pc, [])
                    if s.index not in dsts:
                        dsts.append(s.index)
    for k, v in enumerate(returned):
        p = prod.of(v)
        if p is None:
            continue
        if k in plan.sliced_outputs:  # every piece's core writes its slice
            sp = plan.splits[p]
            for j in range(sp.k):
                name = f"out{k}.p{j}"
                ios[plan.where[(p, j)]].outputs[(p, _result_index(v), j)] = name
                ios[plan.where[(p, j)]].slices[name] = (
                    out_names[k], IOSlice(sp.axis, sp.bounds[j], sp.bounds[j + 1], shape(v)))
        elif p in plan.splits:
            piece = (RETURN, k, None)
            ios[plan.where[(RETURN, k)]].outputs[piece] = out_names[k]
        else:
            piece = (p, _result_index(v), None)
            ios[plan.where[(p, None)]].outputs[piece] = out_names[k]
    return ios


def _slice(arr: np.ndarray, axis: int, lo: int, hi: int) -> np.ndarray:
    idx = [slice(None)] * arr.ndim
    idx[axis] = slice(lo, hi)
    return np.ascontiguousarray(arr[tuple(idx)])


@functools.lru_cache(maxsize=1 << 16)
def _with_dim(t: TensorType, axis: int, n: int) -> TensorType:
    """`t` with `n` along `axis` (remembered: a stage builds the piece types of every
    part of the values it reads in full, 300,000 of them for ResNet-18 on 256 cores)."""
    dims = list(shape_of(t))
    dims[axis] = n
    return TensorType(t.get_element_type(), dims)


def shape_of(t: TensorType) -> tuple[int, ...]:
    return tuple(int(d) for d in t.get_shape())


class _Builder:
    """Emits one stage function's body."""

    def __init__(self, plan: Plan, main: func.FuncOp, io: StageIO, stage: int):
        self.plan, self.main, self.io, self.stage = plan, main, io, stage
        self.prod = _Producers(plan)
        self.block = Block()
        self.arg_names: list[str] = []
        self.local: dict[Piece, SSAValue] = {}
        self.full: dict[tuple[int, int], SSAValue] = {}
        self.graph_args: dict[int, SSAValue] = {}
        self.consts: dict[int, SSAValue] = {}
        in_names = [a.data["nnx.name"].data for a in main.arg_attrs.data] if main.arg_attrs else []
        self.in_names = in_names

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def const(self, arr: np.ndarray | None, v: SSAValue, hint: str = "") -> SSAValue:
        if arr is None:  # the constant unchanged
            if id(v) not in self.consts:
                self.consts[id(v)] = self.emit(g.ConstantOp(v.owner.value)).results[0]
            return self.consts[id(v)]
        return self.emit(g.ConstantOp(register_array(arr, hint))).results[0]

    def arg(self, name: str, t) -> SSAValue:
        a = self.block.insert_arg(t, len(self.block.args))
        self.arg_names.append(name)
        return a

    def graph_input(self, n: int) -> SSAValue:
        if n not in self.graph_args:
            self.graph_args[n] = self.arg(self.in_names[n], self.main.body.block.args[n].type)
        return self.graph_args[n]

    def input_slice(self, n: int, axis: int, a: int, b: int) -> SSAValue:
        """Rows [a, b) (along `axis`) of graph input `n` as an argument of their own,
        loaded from off-chip memory by this core alone (a `.input ... slice=`)."""
        name = f"in{n}.{axis}.{a}.{b}"
        key = ("slice", name)
        if key not in self.local:
            t = self.main.body.block.args[n].type
            self.local[key] = self.arg(name, _with_dim(t, axis, b - a))
            self.io.slices[name] = (self.in_names[n], IOSlice(axis, a, b, shape_of(t)))
        return self.local[key]

    def piece(self, pc: Piece, t) -> SSAValue:
        if pc not in self.local:
            self.local[pc] = self.arg(piece_name(pc), t)
        return self.local[pc]

    def value(self, v: SSAValue, part: int | None) -> SSAValue:
        """The local SSA value of activation `v` (piece `part` or whole)."""
        p = self.prod.of(v)
        if p is None:
            return self.graph_input(v.index)
        r = _result_index(v)
        sp = self.plan.splits.get(p)
        if sp is None:
            return self.piece((p, r, None), v.type)
        if part is not None:
            return self.piece((p, r, part), self.piece_type(v.type, sp, part))
        if isinstance(sp, TileSplit):
            return self.window_value(v, 0, shape_of(v.type)[ROW_AXIS])
        if (p, r) not in self.full:
            parts = [self.piece((p, r, j), self.piece_type(v.type, sp, j)) for j in range(sp.k)]
            if sp.combine == "sum":
                acc = parts[0]
                for x in parts[1:]:
                    acc = self.emit(g.AddOp.build_onnx([acc, x], {}, [v.type])).results[0]
            else:
                acc = self.emit(g.ConcatOp.build_onnx(parts, {"axis": sp.axis}, [v.type])).results[0]
            self.full[(p, r)] = acc
        return self.full[(p, r)]

    @staticmethod
    def piece_type(t, sp: Split, j: int):
        if isinstance(sp, TileSplit):
            (a, b), (lo, hi) = sp.extent(j, ROW_AXIS), sp.extent(j, CHANNEL_AXIS)
            return _with_dim(_with_dim(t, ROW_AXIS, b - a), CHANNEL_AXIS, hi - lo)
        if sp.combine == "sum":
            return t
        return _with_dim(t, sp.axis, sp.bounds[j + 1] - sp.bounds[j])

    def item(self, i: int, part: int | None, returned: list[SSAValue]) -> None:
        if i == RETURN:
            self.local[(RETURN, part, None)] = self.value(returned[part], None)
            return
        op = self.plan.ops[i]
        kind = self.plan.kinds[i]
        if kind == "whole":
            ins = [None if v is None else (self.const(None, v) if constant_op(v) is not None
                                           else self.value(v, None)) for v in op.onnx_inputs()]
            new = self.emit(type(op).build_onnx(ins, op.onnx_attributes(), [r.type for r in op.results]))
        elif kind == "reduce":
            sp = self.plan.reductions[i]
            if isinstance(op, g.GatherOp):
                new = self.emit(self.gather_rows(op, sp.bounds[part], sp.bounds[part + 1]))
                if part > 0:
                    new = self.emit(g.AddOp.build_onnx(
                        [self.piece((i, 0, part - 1), op.results[0].type), new.results[0]], {},
                        [op.results[0].type]))
            else:
                new = self.partial_sum(op, sp, sp.bounds[part], sp.bounds[part + 1], part)
            if part == sp.k - 1:  # the last part holds the whole result
                self.local[(i, 0, None)] = new.results[0]
        elif kind == "rows":
            new = self.emit(self.rows_part(op, self.plan.splits[i], part))
        elif kind == "block":  # the last part of chain j is numbered j: it holds piece j
            new = self.block_part(op, self.plan.blocks[i], part)
        elif kind == "tile":
            new = self.tile_part(op, self.plan.splits[i], part)
        elif isinstance(self.plan.splits[i], TileSplit):  # a follower of tiles: its tile
            ts = self.plan.splits[i]
            lo, hi = ts.extent(part, CHANNEL_AXIS)
            new = self.emit(self.part_op(op, kind, Split(CHANNEL_AXIS, ts.groups), lo, hi, part,
                                         self.piece_type(op.results[0].type, ts, part)))
        else:
            sp = self.plan.splits[i]
            lo, hi = sp.bounds[part], sp.bounds[part + 1]
            new = self.emit(self.part_op(op, kind, sp, lo, hi, part))
        for r, res in enumerate(new.results):
            self.local[(i, r, part)] = res

    def part_op(self, op: Operation, kind: str, sp: Split, lo: int, hi: int, part: int,
                out_t=None) -> Operation:
        """Part [lo, hi) (along `sp.axis`) of an output split or follower `op`, its
        constants sliced to it; `out_t`: its result type, when not the slice's."""
        attrs = op.onnx_attributes()
        part_t, out_t = out_t, op.results[0].type
        ins: list[SSAValue | None] = []
        for pos, v in enumerate(op.onnx_inputs()):
            if v is None:
                ins.append(None)
                continue
            arr = const_value(v)
            if arr is None:
                ins.append(self.value(v, part if kind == "follow" else None))
                continue
            ins.append(self.const(self.slice_const(op, pos, arr, sp, lo, hi), v, f"{op.name}_{part}"))
        if isinstance(op, g.ConvOp) and kind == "follow":
            attrs["group"] = hi - lo
        return type(op).build_onnx(ins, attrs, [part_t or _with_dim(out_t, sp.axis, hi - lo)])

    def rows_part(self, op: Operation, sp: Split, part: int) -> Operation:
        """Output rows [lo, hi) of `op` (nnx/mesh/rows.py): its windowed operands cut
        to the rows the band reads, its constants whole, the band's own pads."""
        lo, hi = sp.bounds[part], sp.bounds[part + 1]
        a, b, _, _ = row_window(op, lo, hi)
        i = self.plan.ops.index(op)
        in_axis = self.plan.row_inputs.get(i, ROW_AXIS)
        load_slice = i in self.plan.sliced_inputs
        windowed = [op.operands[k] for k in windowed_operands(op)]
        out_t = _with_dim(op.results[0].type, sp.axis, hi - lo)
        if is_row_view(op):  # the band of a view or transpose: the input band viewed
            band = self.window_value(op.operands[0], a, b, in_axis, load_slice)
            if isinstance(op, g.TransposeOp):
                return g.TransposeOp.build_onnx([band], op.onnx_attributes(), [out_t])
            dims = self.emit(g.ConstantOp(register_array(np.array(shape_of(out_t), np.int64)))).results[0]
            return g.ReshapeOp.build_onnx([band, dims], {}, [out_t])
        ins: list[SSAValue | None] = []
        for v in op.onnx_inputs():
            if v is None:
                ins.append(None)
            elif constant_op(v) is not None:
                ins.append(self.const(None, v))
            elif any(v is u for u in windowed):
                ins.append(self.window_value(v, a, b, in_axis, load_slice))
            else:
                ins.append(self.value(v, None))
        return type(op).build_onnx(ins, part_attributes(op, lo, hi), [out_t])

    def slice_rows(self, x: SSAValue, lo: int, hi: int, t, axis: int) -> SSAValue:
        """Rows [lo, hi) (along `axis`) of local value `x`, of type `t`."""
        consts = [self.emit(g.ConstantOp(register_array(np.array([n], np.int64)))).results[0]
                  for n in (lo, hi, axis)]
        return self.emit(g.SliceOp.build_onnx([x] + consts, {}, [t])).results[0]

    def window_piece(self, pc: Piece, v: SSAValue) -> SSAValue:
        """The local value of piece `pc` of activation `v` (a windowed piece is sliced
        here when its piece is local, else it is an argument received)."""
        p, _, q = pc[:3]
        sp = self.plan.splits.get(p)
        t = v.type if q is None or sp is None else self.piece_type(v.type, sp, q)
        if len(pc) == 3:
            return self.piece(pc, t)
        lo, hi, axis = pc[3]
        wt = _with_dim(t, axis, hi - lo)
        if pc not in self.local and pc[:3] in self.local:
            if isinstance(sp, TileSplit):
                off = sp.extent(q, axis)[0]
            else:
                off = sp.bounds[q] if sp is not None and q is not None and sp.axis == axis else 0
            self.local[pc] = self.slice_rows(self.local[pc[:3]], lo - off, hi - off, wt, axis)
        return self.piece(pc, wt)

    def window_value(self, v: SSAValue, a: int, b: int, axis: int = ROW_AXIS, load_slice: bool = False) -> SSAValue:
        """Rows [a, b) (along `axis`) of activation `v`, from the pieces that hold them
        (of a graph input: sliced from the whole input, or with `load_slice` loaded
        alone)."""
        rows = shape_of(v.type)[axis]
        p = self.prod.of(v)
        if p is None and load_slice and (a, b) != (0, rows):
            return self.input_slice(v.index, axis, a, b)
        if p is None:
            x = self.graph_input(v.index)
            return x if (a, b) == (0, rows) else self.slice_rows(x, a, b, _with_dim(v.type, axis, b - a), axis)
        if isinstance(self.plan.splits.get(p), TileSplit):
            return self.tile_window(v, a, b, axis)
        vals = [self.window_piece(pc, v) for pc in self.prod.window(v, a, b, axis)]
        if len(vals) == 1:
            return vals[0]
        sp = self.plan.splits[p]
        return self.emit(g.ConcatOp.build_onnx(vals, {"axis": sp.axis},
                                               [_with_dim(v.type, axis, b - a)])).results[0]

    def tile_groups(self, v: SSAValue, a: int, b: int, axis: int = ROW_AXIS) -> list[tuple[SSAValue, int, int]]:
        """[a, b) along `axis` (rows, or channels) of tiled activation `v`, one value
        per slice of the other axis (per channel group, or per band): (its tiles in
        [a, b) joined along `axis` -- received in place --, its first and end along
        the other axis)."""
        ts: TileSplit = self.plan.splits[self.prod.of(v)]
        other = CHANNEL_AXIS if axis == ROW_AXIS else ROW_AXIS
        by_key: dict[int, list[SSAValue]] = {}
        for pc in self.prod.window(v, a, b, axis):
            band, group = ts.coords(pc[2])
            by_key.setdefault(group if axis == ROW_AXIS else band, []).append(self.window_piece(pc, v))
        out = []
        for key, vals in sorted(by_key.items()):
            lo, hi = ts.extent(ts.part(0, key) if axis == ROW_AXIS else ts.part(key, 0), other)
            t = _with_dim(_with_dim(v.type, axis, b - a), other, hi - lo)
            x = vals[0] if len(vals) == 1 else self.emit(g.ConcatOp.build_onnx(vals, {"axis": axis}, [t])).results[0]
            out.append((x, lo, hi))
        return out

    def tile_window(self, v: SSAValue, a: int, b: int, axis: int) -> SSAValue:
        """[a, b) along `axis` (rows, or channels) of tiled activation `v`: the
        values of `tile_groups` joined along the other axis (a copy)."""
        parts = self.tile_groups(v, a, b, axis)
        if len(parts) == 1:
            return parts[0][0]
        other = CHANNEL_AXIS if axis == ROW_AXIS else ROW_AXIS
        return self.emit(g.ConcatOp.build_onnx([x for x, _, _ in parts], {"axis": other},
                                               [_with_dim(v.type, axis, b - a)])).results[0]

    def tile_part(self, op: Operation, ts: TileSplit, part: int) -> Operation:
        """Tile (band b, channel group j) of conv `op` (emitted; nnx/mesh/tile_splits.py):
        output rows band b of channels j, from the input rows the band reads, with the
        weights of channels j and the band's own pads; from a tiled input one product
        per input channel group (weights of (j, group)), summed, the bias's slice j on
        the first. Returns the op of the result."""
        (lo, hi), (clo, chi) = ts.extent(part, ROW_AXIS), ts.extent(part, CHANNEL_AXIS)
        a, b, _, _ = row_window(op, lo, hi)
        v = op.operands[0]
        if isinstance(self.plan.splits.get(self.prod.of(v)), TileSplit):
            xs = self.tile_groups(v, a, b)
        else:
            load = self.plan.ops.index(op) in self.plan.sliced_inputs
            xs = [(self.window_value(v, a, b, ROW_AXIS, load), 0, shape_of(v.type)[CHANNEL_AXIS])]
        warr = const_value(op.operands[1])
        bias = list(op.onnx_inputs())[2:]
        out_t = self.piece_type(op.results[0].type, ts, part)
        attrs = part_attributes(op, lo, hi)
        name = f"{op.name}_t{part}"
        last: Operation | None = None
        for n, (x, glo, ghi) in enumerate(xs):
            ins: list[SSAValue | None] = [x, self.const(np.ascontiguousarray(warr[clo:chi, glo:ghi]),
                                                        op.operands[1], name)]
            ins += [self.const(_slice(const_value(c), 0, clo, chi), c, name) for c in bias if c is not None and n == 0]
            prod = self.emit(type(op).build_onnx(ins, attrs, [out_t]))
            last = prod if last is None else self.emit(
                g.AddOp.build_onnx([last.results[0], prod.results[0]], {}, [out_t]))
        return last

    def send_value(self, pc: Piece) -> SSAValue:
        """The local value a sent piece is (a windowed piece: sliced from its piece)."""
        if len(pc) == 3:
            return self.local[pc]
        return self.window_piece(pc, self.plan.ops[pc[0]].results[pc[1]])

    def partial_sum(self, op: Operation, sp: Split, lo: int, hi: int, part: int) -> Operation:
        """Part [lo, hi) of a reduction split (emitted): one partial product per input
        piece in that range (with the weights' matching slice; no concat, which would
        copy the input), the bias on part 0's first product, plus the running sum of
        the parts before (received from part - 1); returns the op of the sum."""
        v = op.operands[0]
        psp = self.plan.splits[self.prod.of(v)]
        w = op.operands[1]
        warr = const_value(w)
        if isinstance(op, g.ConvOp):
            w_axis = 1
        elif isinstance(op, g.GemmOp):
            w_axis = 1 if op.attr("transB", 0) else 0
        else:
            w_axis = 0
        out_t = op.results[0].type
        last: Operation | None = None
        for n, pc in enumerate(self.prod.reduce_pieces(v, sp, part)):
            plo, phi = psp.bounds[pc[2]], psp.bounds[pc[2] + 1]
            ins: list[SSAValue | None] = [self.piece(pc, self.piece_type(v.type, psp, pc[2])),
                                          self.const(_slice(warr, w_axis, plo, phi), w, f"{op.name}_{pc[2]}")]
            for b in list(op.onnx_inputs())[2:]:
                ins.append(None if b is None or part != 0 or n != 0 else
                           (self.const(None, b) if constant_op(b) is not None else self.value(b, None)))
            while ins and ins[-1] is None:
                ins.pop()
            prod = self.emit(type(op).build_onnx(ins, op.onnx_attributes(), [out_t]))
            last = prod if last is None else self.emit(
                g.AddOp.build_onnx([last.results[0], prod.results[0]], {}, [out_t]))
        if part > 0:
            before = self.piece((self.plan.ops.index(op), 0, part - 1), out_t)
            last = self.emit(g.AddOp.build_onnx([before, last.results[0]], {}, [out_t]))
        return last

    def block_part(self, op: Operation, blk: BlockSplit, part: int) -> Operation:
        """Part (r, j) of a 2-D split (emitted; docs/mesh.md, "2-D splits"): output
        piece j's partial sum over input range r, from weight block (j, r), one
        product per received input piece when the input is split along the reduction
        axis (no concat), the bias's slice j on range 0, plus the running sum of
        piece j received from part (r - 1, j); returns the op of the sum."""
        r, j = blk.coords(part)
        lo, hi = blk.inputs.bounds[r], blk.inputs.bounds[r + 1]
        olo, ohi = blk.outputs.bounds[j], blk.outputs.bounds[j + 1]
        axis = blk.inputs.axis
        v = op.operands[0]
        p = self.prod.of(v)
        psp = self.plan.splits.get(p) if p is not None else None
        pcs = self.prod.window(v, lo, hi, axis) if p is not None else []
        if isinstance(psp, Split) and psp.axis == axis and psp.combine == "concat" and len(pcs) > 1:
            xs = [(self.window_piece(pc, v), *(pc[3][:2] if len(pc) == 4 else psp.bounds[pc[2]:pc[2] + 2]))
                  for pc in pcs]
        else:
            load = self.plan.ops.index(op) in self.plan.sliced_inputs  # its input range loaded alone
            xs = [(self.window_value(v, lo, hi, axis, load), lo, hi)]
        warr = const_value(op.operands[1])
        if isinstance(op, g.ConvOp) or (isinstance(op, g.GemmOp) and op.attr("transB", 0)):
            def w_block(a: int, b: int) -> np.ndarray:  # out x in
                return np.ascontiguousarray(warr[olo:ohi, a:b])
        else:
            def w_block(a: int, b: int) -> np.ndarray:  # in x out
                return np.ascontiguousarray(warr[a:b, olo:ohi])
        out_t = _with_dim(op.results[0].type, blk.outputs.axis, ohi - olo)
        name = f"{op.name}_b{part}"
        last: Operation | None = None
        for n, (x, a, b) in enumerate(xs):
            ins: list[SSAValue | None] = [x, self.const(w_block(a, b), op.operands[1], name)]
            for pos, c in list(enumerate(op.onnx_inputs()))[2:]:
                if c is None or r != 0 or n != 0:
                    ins.append(None)
                else:
                    ins.append(self.const(self.slice_const(op, pos, const_value(c), blk.outputs, olo, ohi), c, name))
            while ins and ins[-1] is None:
                ins.pop()
            prod = self.emit(type(op).build_onnx(ins, op.onnx_attributes(), [out_t]))
            last = prod if last is None else self.emit(
                g.AddOp.build_onnx([last.results[0], prod.results[0]], {}, [out_t]))
        if r > 0:
            before = self.piece((self.plan.ops.index(op), 0, blk.part(r - 1, j)), out_t)
            last = self.emit(g.AddOp.build_onnx([before, last.results[0]], {}, [out_t]))
        return last

    def slice_const(self, op, pos, arr, sp: Split, lo, hi):
        """The slice of constant operand `pos` that part [lo, hi) of `op` uses (None:
        the whole constant)."""
        full = shape_of(op.results[0].type)[sp.axis]
        if isinstance(op, g.GatherOp):  # columns of the table
            return _slice(arr, arr.ndim - 1, lo, hi) if pos == 0 else None
        if sp.axis == ROW_AXIS and isinstance(op, (g.ConvOp, g.BatchNormalizationOp)):
            return None  # per-channel constants: every row piece uses them whole
        if isinstance(op, g.ConvOp) or isinstance(op, g.BatchNormalizationOp):
            return _slice(arr, 0, lo, hi) if pos >= 1 else None
        if isinstance(op, g.GemmOp):
            if pos == 1:
                return _slice(arr, 0 if op.attr("transB", 0) else 1, lo, hi)
            if pos == 2 and arr.ndim >= 1 and arr.shape[-1] == full:
                return _slice(arr, arr.ndim - 1, lo, hi)
            return None
        if isinstance(op, g.MatMulOp):
            return _slice(arr, 1, lo, hi) if pos == 1 else None
        # elementwise follower: a broadcast constant
        r = len(shape_of(op.results[0].type)) - arr.ndim
        ax = sp.axis - r
        if ax >= 0 and arr.shape[ax] == full and full != 1:
            return _slice(arr, ax, lo, hi)
        return None

    def gather_rows(self, op: Operation, lo: int, hi: int) -> Operation:
        """Rows [lo, hi) of the table: indices outside gather the zero row appended to
        the slice (index hi - lo, or -1 = the last row)."""
        table = const_value(op.operands[0])
        rows = np.concatenate([table[lo:hi], np.zeros((1,) + table.shape[1:], table.dtype)])
        t = self.const(np.ascontiguousarray(rows), op.operands[0], f"{op.name}_rows{lo}")
        idx = self.value(op.operands[1], None)
        idt = op.operands[1].type
        from nnx.types import numpy_dtype_of

        dt = np.dtype(numpy_dtype_of(idt.get_element_type()))
        lo_c = self.emit(g.ConstantOp(register_array(np.array(lo, dt)))).results[0]
        lo_m = self.emit(g.ConstantOp(register_array(np.array(-1, dt)))).results[0]
        hi_m = self.emit(g.ConstantOp(register_array(np.array(hi - lo, dt)))).results[0]
        shifted = self.emit(g.SubOp.build_onnx([idx, lo_c], {}, [idt])).results[0]
        safe = self.emit(g.ClipOp.build_onnx([shifted, lo_m, hi_m], {}, [idt])).results[0]
        return g.GatherOp.build_onnx([t, safe], {"axis": 0}, [op.results[0].type])


def build_stage_module(plan: Plan, main: func.FuncOp, io: StageIO, stage: int,
                       returned: list[SSAValue]) -> tuple[ModuleOp, list[str], list[str]]:
    """The module (`func.func @main`) of one stage, with its argument names and result
    names (graph input/output names, or piece names = message tags)."""
    b = _Builder(plan, main, io, stage)
    sent: dict[Piece, SSAValue] = {}
    bands: dict[Piece, list[Piece]] = {}  # piece -> its bands sent
    for pc in io.send:
        if len(pc) == 4:
            bands.setdefault(pc[:3], []).append(pc)
    for i, part in plan.stages[stage].items:
        b.item(i, part, returned)
        # a band sent is sliced as soon as its piece is computed, so that a core's
        # sends follow its items' order (the latency schedule relies on it:
        # nnx/mesh/latency.py)
        for base in [q for q in bands if q in b.local]:
            for pc in bands.pop(base):
                sent[pc] = b.send_value(pc)
    res_names, res_vals = [], []
    for pc in sorted(io.send, key=piece_name):
        res_names.append(piece_name(pc))
        res_vals.append(sent[pc] if pc in sent else b.send_value(pc))
    for pc, name in io.outputs.items():
        res_names.append(name)
        res_vals.append(b.local[pc])
    b.emit(func.ReturnOp(*res_vals))
    f = func.FuncOp("main", ([a.type for a in b.block.args], [v.type for v in res_vals]), Region(b.block),
                    arg_attrs=ArrayAttr([DictionaryAttr({"nnx.name": StringAttr(n)}) for n in b.arg_names]),
                    res_attrs=ArrayAttr([DictionaryAttr({"nnx.name": StringAttr(n)}) for n in res_names]))
    return ModuleOp([f]), b.arg_names, res_names
