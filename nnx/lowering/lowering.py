"""The lowering of one function's graph (+ sparse) ops to chip instructions.

`lower_function(func, target, ...)` walks the ops in block order (the schedule):
storage buffers come from a `StorageAllocator`, residency from `Residency`, the
instructions go to an `InstructionStream` (nnx/lowering/context.py bundles them for
the per-op functions); each op is lowered by the functions of fusion.py,
group_chain.py, data_movement.py, compute.py and sparse_weights.py, and
`lower_program` returns everything as plain data (nnx/lowering/program.py), whose
`chip.program` in emitted order `lower_function` builds (the input of chip-allocate,
chip-schedule and chip-sync; see passes/chip_lower.py).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import StringAttr

from nnx.lowering import compute, data_movement, fusion, group_chain, sparse_weights
from nnx.lowering.context import LoweringContext
from nnx.lowering.program import LoweredProgram, lowered_program, program_op
from nnx.lowering.errors import LoweringError
from nnx.lowering.storage import _py, chip_dtype_name, is_alias, Tensor
from nnx.tiling import TilingError


def value_names(attrs, count: int, default: str) -> list[str]:
    """The `nnx.name` of each of `count` arguments/results, else `default<i>`."""
    data = attrs.data if attrs is not None else None
    out = []
    for i in range(count):
        name = f"{default}{i}"
        if data is not None and i < len(data):
            n = data[i].data.get("nnx.name")
            if isinstance(n, StringAttr):
                name = n.data
        out.append(name)
    return out


def lower_function(func, target, double_buffer: bool, max_tile: int, chain: bool = True, schedule: bool = True,
                   concat_in_place: bool = False, written: frozenset[str] = frozenset()):
    """Lower `func` (graph + sparse ops): (the `chip.program`, the emitted
    (instruction, reads, writes) in program order). `concat_in_place`: a concat of
    arguments is their one buffer (`in_place_concats`; strided views only of the
    arguments named in `written`, which the program's runner writes, not loads).
    Raises `LoweringError`."""
    lp = lower_program(func, target, double_buffer, max_tile, chain, schedule, concat_in_place, written)
    return program_op(lp, accesses=True), lp.entries


def lower_program(func, target, double_buffer: bool, max_tile: int, chain: bool = True, schedule: bool = True,
                  concat_in_place: bool = False, written: frozenset[str] = frozenset()) -> LoweredProgram:
    """`lower_function`'s program as plain data (nnx/lowering/program.py), no IR.
    Raises `LoweringError`."""
    cx, inputs, outputs = _lower_ops(func, target, double_buffer, max_tile, chain, schedule, concat_in_place,
                                     written)
    lp = lowered_program(cx, inputs, outputs)
    if not schedule:  # list scheduling moves instructions: positions hold in emitted order only
        lp.op_positions = _op_positions(func, cx.op_at, inputs, outputs)
    return lp


def _op_positions(func, op_at: dict, inputs: list, outputs: list) -> dict[str, tuple[int, int]]:
    """Input symbol -> (position: instructions emitted before it, index in the block)
    of the first op reading it; output symbol -> (position just after, index) of the
    op producing it. Where a value no instruction touches stands in the op order: a
    piece received and passed on through a view (a reshape emits nothing), whose
    RECV and SEND then keep the layers' order (nnx/mesh/stitch.py, `_Passing`)."""
    from xdsl.ir import OpResult

    block = func.body.block
    index = {op: i for i, op in enumerate(block.ops)}
    out: dict[str, tuple[int, int]] = {}
    for (name, _), arg in zip(inputs, block.args):
        at = [(op_at[u.operation][0], index[u.operation]) for u in arg.uses if u.operation in op_at]
        if at:
            out[name] = min(at)
    ret = block.last_op
    for (name, _), v in zip(outputs, ret.operands if ret is not None else ()):
        if isinstance(v, OpResult) and v.owner in op_at:
            out[name] = (op_at[v.owner][1], index[v.owner])
    return out


def lower_entries(func, target, double_buffer: bool, max_tile: int, chain: bool = True, schedule: bool = True):
    """The emitted (instruction, reads, writes) of `lower_function`, in program order,
    without building the `chip.program` (no IR: the instructions' storage tiles point
    into `@buffer` symbols). For callers that only time the program (topo-reorder's
    candidate orders, docs/topological-order.md). Raises `LoweringError`."""
    return _lower_ops(func, target, double_buffer, max_tile, chain, schedule)[0].stream.entries


def _lower_ops(func, target, double_buffer: bool, max_tile: int, chain: bool, schedule: bool,
               concat_in_place: bool = False, written: frozenset[str] = frozenset()):
    """Lower every op of `func`: (the lowering context, the inputs, the outputs)."""
    from xdsl.dialects import func as fdialect

    from nnx.dialects import sparse as sd
    from nnx.dialects.graph import ConstantOp, GraphOp

    cx = LoweringContext.create(target, double_buffer, max_tile, chain, schedule)
    block = func.body.block
    ret = next((o for o in block.ops if isinstance(o, fdialect.ReturnOp)), None)
    if ret is not None:
        cx.returned.update(ret.arguments)
    inputs: list[tuple[str, Tensor]] = []
    if concat_in_place:
        names = dict(zip(block.args, value_names(func.arg_attrs, len(block.args), "arg")))
        strided = {a for a, n in names.items() if n in written}
        for op, (pieces, nested) in in_place_concats(block, cx.returned, strided).items():
            whole = cx.store.result_tensor(op.results[0])
            cx.store.buffer(whole.buffer).kind = "input"
            for v, start in pieces:  # the pieces received, and the joins of them a join reads
                cx.store.tensors[v] = _view_in(whole, tuple(v.type.get_shape()), start)
            here = {v for v, _ in pieces}
            for o in nested + [op]:
                cx.in_place[o] = frozenset(v for v in o.onnx_inputs() if v in here)
            if any(v not in here for o in nested + [op] for v in o.onnx_inputs()):
                cx.unfilled.add(op.results[0])  # complete once its copies are emitted
    for arg, name in zip(block.args, value_names(func.arg_attrs, len(block.args), "arg")):
        t = cx.store.tensors.get(arg)
        if t is None:
            t = cx.store.allocate(tuple(arg.type.get_shape()), chip_dtype_name(arg.type), "input")  # type: ignore[attr-defined]
            cx.store.tensors[arg] = t
        inputs.append((cx.store.fresh(name), t))
    # the outputs' names are reserved before any constant is named (a constant must
    # not take a graph output's name)
    nout = len(ret.arguments) if ret is not None else 0
    out_names = [cx.store.fresh(n) for n in value_names(func.res_attrs, nout, "out")]
    cx.views = transpose_views(block)
    cx.residency.liveness(block, cx.views)
    outputs: list[tuple[str, Tensor]] = []
    for idx, op in enumerate(block.ops):
        cx.residency.idx = idx
        before = len(cx.stream.entries)
        cx.op_at[op] = (before, before)
        if isinstance(op, ConstantOp) or op in cx.fused:
            continue
        cx.residency.release_dead()
        if isinstance(op, fdialect.ReturnOp):
            for i, v in enumerate(op.arguments):
                outputs.append((out_names[i], cx.store.storage(v, op)))
            continue
        try:
            if isinstance(op, tuple(sd.SPARSE_OPS)):
                sparse_weights.lower_sparse(cx, op)
            elif isinstance(op, GraphOp):
                lower_graph(cx, op)
            else:
                raise LoweringError(f"cannot lower {op.name}", op)
        except TilingError as e:
            raise LoweringError(f"{op.name} does not fit the caches: {e}", op) from None
        except ValueError as e:
            raise LoweringError(f"{op.name}: {e}", op) from None
        cx.op_at[op] = (before, len(cx.stream.entries))
    return cx, inputs, outputs


def _view_in(whole: Tensor, shape: tuple[int, ...], start: tuple[int, ...]) -> Tensor:
    """The box of `shape` at element index `start` of storage tensor `whole`: one byte
    range where the box is contiguous in it (every axis before its first partial
    one of extent 1, every axis after it whole), else a strided view."""
    strides = whole.row_major()
    offset = whole.offset + sum(a * st for a, st in zip(start, strides)) * whole.itemsize
    return Tensor(offset, shape, whole.dtype, whole.buffer, "S", None if _contiguous(shape, whole.shape) else strides)


def _contiguous(shape: tuple[int, ...], whole: tuple[int, ...]) -> bool:
    partial = [i for i, (d, w) in enumerate(zip(shape, whole)) if d != w]
    if not partial:
        return True
    first = partial[0]
    return all(d == 1 for d in shape[:first]) and partial == [first]


def in_place_concats(block, returned, strided: set = frozenset()) -> dict:
    """The concats whose pieces can be written straight into the result's buffer
    (docs/mesh.md, "Received pieces in place"). A piece is an argument of the
    function that no other concat places, or a concat of this kind that only this
    one reads (a tiled value's row bands of each channel group joined, then the
    groups joined: nnx/mesh/core_graph.py `tile_window`); the other operands (the
    pieces a core computed itself) are copied in when the concat is lowered. Each
    piece is then a view of the outermost result at its place: one contiguous byte
    range where it is contiguous there (a channel piece of an N = 1 NCHW tensor),
    else strided (a band of rows), which only arguments in `strided` may be (a mesh
    core's received pieces, which a RECV writes through strides; a program input is
    loaded dense). Outermost concat op -> ([(piece, its first element index in the
    outermost result)], the inner concat ops). A concat the function returns is not
    one (its buffer is the output's), nor one without a piece."""
    from xdsl.ir import BlockArgument

    from nnx.dialects.graph import ConcatOp, GraphOp
    from nnx.passes.graph_transpose_views import VIEW_ATTR

    claimed: set = set()
    out: dict = {}
    #: result of an in-place concat -> its op, while no outer concat has taken it
    roots: dict = {}
    for op in block.ops:
        if not isinstance(op, ConcatOp) or op.results[0] in returned:
            continue
        # read by instructions, which place each piece's receive (nnx/mesh/stitch.py):
        # not through a view (its pieces would be sent on untouched)
        if any(not isinstance(u.operation, GraphOp) or is_alias(u.operation) or VIEW_ATTR in u.operation.attributes
               for u in op.results[0].uses):
            continue
        ins = op.onnx_inputs()
        shape = tuple(op.results[0].type.get_shape())
        ax = int(_py(op.onnx_attributes().get("axis", 0)))
        ax = ax + len(shape) if ax < 0 else ax
        dtype = op.results[0].type.get_element_type()
        if not ins or len(set(ins)) != len(ins):
            continue

        def placeable(v) -> bool:
            if v in claimed or v.type.get_element_type() != dtype:
                return False
            return isinstance(v, BlockArgument) or (v in roots and sum(1 for _ in v.uses) == 1)
        pieces, nested, pos = [], [], 0
        for v in ins:
            at = tuple(pos if i == ax else 0 for i in range(len(shape)))
            pos += int(v.type.get_shape()[ax])
            if not placeable(v):
                continue
            pieces.append((v, at))
            if v in roots:  # an inner join: its pieces move into this result
                inner_pieces, inner_nested = out[roots[v]]
                pieces += [(p, tuple(a + b for a, b in zip(at, s))) for p, s in inner_pieces]
                nested += inner_nested + [roots[v]]
        if not pieces or any(isinstance(v, BlockArgument) and v not in strided
                             and not _contiguous(tuple(v.type.get_shape()), shape) for v, _ in pieces):
            continue
        for v, _ in pieces:
            if v in roots:
                del out[roots.pop(v)]
        claimed.update(v for v, _ in pieces)
        out[op] = (pieces, nested)
        roots[op.results[0]] = op
    return out


def transpose_views(block) -> set:
    """The Transposes marked `nnx.view` by graph-transpose-views (lowered as strided
    views); a mark on a Transpose that cannot be a view is a LoweringError."""
    from nnx.passes.graph_transpose_views import is_transpose_view, VIEW_ATTR

    views = set()
    for op in block.ops:
        if VIEW_ATTR in op.attributes:
            if not is_transpose_view(op):
                raise LoweringError(f"{op.name} is marked {VIEW_ATTR} but cannot be a view (see graph-transpose-views)", op)
            views.add(op)
    return views


def lower_graph(cx: LoweringContext, op) -> None:
    """One graph op: a view (Transpose, aliases), data movement, a grouped channel
    chain, or a compute op with what fuses into it (bias-Gemm, accumulator init,
    epilogues)."""
    from nnx.dialects.graph import ConcatOp, ConvOp, GatherOp, MatMulOp, SliceOp, SplitOp

    kind = op.ONNX_TYPE  # the tiling rule and instruction of the op (nnx.tiling.rule_for)
    ins = op.onnx_inputs()
    outs = op.onnx_outputs()
    attrs = {k: _py(v) for k, v in op.onnx_attributes().items()}
    if any(o is None for o in outs):
        raise LoweringError(f"{op.name} with an absent optional output in the middle is not supported", op)
    if op in cx.in_place and all(v in cx.in_place[op] for v in ins):  # received into its buffer
        return
    if op in cx.views:
        src = cx.store.storage(ins[0], op)
        r = len(src.shape)
        perm = [int(p) for p in attrs.get("perm", list(range(r))[::-1])]
        cx.store.tensors[outs[0]] = src.permuted(perm)
        return
    # aliases: same bytes, new shape
    if is_alias(op):
        src = cx.store.storage(ins[0], op)  # the storage view; residency goes by the root
        for o in outs[:1]:
            cx.store.tensors[o] = src.view(tuple(o.type.get_shape()))
        if len(outs) > 1:
            # the (unused) mask of an inference Dropout: all true
            cx.store.tensors[outs[1]] = cx.store.const_array(np.ones(outs[1].type.get_shape(), np.bool_), "mask")
        return
    for v in ins:
        if v is not None:
            cx.residency.tensor(v, op)
    if isinstance(op, ConcatOp):
        data_movement.lower_concat(cx, op, ins, outs, attrs, cx.in_place.get(op))
        cx.unfilled.discard(outs[0])
        return
    if isinstance(op, SplitOp):
        return data_movement.lower_split(cx, op, ins, outs, attrs)
    if isinstance(op, SliceOp) and data_movement.lower_slice(cx, op, ins, outs, attrs):
        return
    if isinstance(op, GatherOp) and data_movement.lower_gather(cx, op, ins, outs, attrs):
        return
    if isinstance(op, ConvOp) and group_chain.try_group_chain(cx, op):
        return
    epi = fusion.epilogue_chain(cx, op, outs) if len(outs) == 1 else []
    matmul = isinstance(op, MatMulOp)
    bg = fusion.bias_gemm(cx, ins[0], ins[1], epi) if matmul else None
    if bg is not None:
        gins, views, out_view, rest = bg
        last = rest[-1][0] if rest else epi[0][0]
        compute.lower_compute(cx, op, "Gemm", gins, [last.onnx_outputs()[0]], {}, None, views, out_view, epilogue=rest)
        return
    ai = fusion.acc_init(cx, ins[0], ins[1], epi) if matmul and cx.schedule else None
    if ai is not None:
        mins, rest = ai
        last = rest[-1][0] if rest else epi[0][0]
        compute.lower_compute(cx, op, kind, mins, [last.onnx_outputs()[0]], attrs, epilogue=rest)
        return
    if epi:
        compute.lower_compute(cx, op, kind, ins, [epi[-1][0].onnx_outputs()[0]], attrs, epilogue=epi)
        return
    compute.lower_compute(cx, op, kind, ins, outs, attrs)


