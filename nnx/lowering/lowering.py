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
    return lowered_program(cx, inputs, outputs)


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
        for op, (axis, places) in in_place_concats(block, cx.returned, strided).items():
            whole = cx.store.result_tensor(op.results[0])
            cx.store.buffer(whole.buffer).kind = "input"
            # a piece is one byte range when every axis before the concat axis has
            # extent 1, else a strided view of the result
            strides = None if all(d == 1 for d in whole.shape[:axis]) else whole.row_major()
            for arg, offset in places:
                cx.store.tensors[arg] = Tensor(offset, tuple(arg.type.get_shape()), whole.dtype, whole.buffer, "S",
                                               strides)
            cx.in_place.add(op)
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
    return cx, inputs, outputs


def in_place_concats(block, returned, strided: set = frozenset()) -> dict:
    """The concats whose operands can be written straight into the result's buffer
    (docs/mesh.md, "Received pieces in place"): every operand an argument of the
    function that no other concat reads. Each operand is then a view of the result
    at its byte offset: one contiguous range when every axis before the concat axis
    has extent 1 (a channel piece of an N = 1 NCHW tensor), else strided (a band of
    rows), which only arguments in `strided` may be (a mesh core's received pieces,
    which a RECV writes through strides; a program input is loaded dense). Concat
    op -> (its axis, [(argument, byte offset)]). A concat the function returns is
    not one (its buffer is the output's)."""
    from xdsl.ir import BlockArgument

    from nnx.dialects.graph import ConcatOp, GraphOp
    from nnx.passes.graph_transpose_views import VIEW_ATTR

    claimed: set = set()
    out: dict = {}
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
        if not ins or (any(d != 1 for d in shape[:ax]) and not all(v in strided for v in ins)):
            continue
        if any(not isinstance(v, BlockArgument) or v in claimed or v.type.get_element_type() !=
               op.results[0].type.get_element_type() for v in ins) or len(set(ins)) != len(ins):
            continue
        itemsize = Tensor(0, (), chip_dtype_name(op.results[0].type), None).itemsize
        inner = int(np.prod(shape[ax + 1:], dtype=np.int64))
        places, pos = [], 0
        for v in ins:
            places.append((v, pos * inner * itemsize))
            pos += int(v.type.get_shape()[ax])
        claimed.update(ins)
        out[op] = (ax, places)
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
    if op in cx.in_place:  # its operands were received into its buffer
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
        return data_movement.lower_concat(cx, op, ins, outs, attrs)
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


