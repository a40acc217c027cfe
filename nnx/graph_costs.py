"""Graph-level costs of graph-dialect ops by the target's formulas, and the timeline
data of a block (docs/tensor-timing-and-swapping.md, "Op delays").

An op's delay uses the target's own cost definitions (`Target.mpu_cycles`,
`Target.vpu_cycles`, `HostLinkSpec.transfer_cycles`): conv/matmul/gemm run on the MPU
for their MACs, other compute ops on the VPU for max(input, output) elements; both
are bounded below by the device-memory traffic (bytes read + written at
`device.memory_bytes_per_cycle`, the roofline). Swaps occupy the host link (D2H for
swap_out, H2D for swap_in; one shared LINK when the link is half duplex). Constants
and views (`ViewLike` ops: same bytes, new shape) take no time and no memory.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from xdsl.ir import Attribute, Block, Operation, SSAValue

from nnx.dialects.traits import MatrixCompute, ViewLike
from nnx.memory_rules import DEFAULT as DEFAULT_RULES
from nnx.memory_rules import MemoryRules, apply_rules
from nnx.memory_timeline import TimelineOp, TimelineValue
from nnx.target import Target
from nnx.types import numpy_dtype_of



def value_bytes(v: SSAValue) -> int:
    """Bytes of a static tensor value (0 for anything else)."""
    return type_bytes(v.type)


@functools.lru_cache(maxsize=4096)
def type_bytes(t: Attribute) -> int:
    """Bytes of a static tensor type (0 for anything else); remembered per type (the
    mesh partitioner asks for the same few types many thousand times)."""
    try:
        shape = t.get_shape()  # type: ignore[attr-defined]
        item = numpy_dtype_of(t.element_type).itemsize  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - not a tensor of a known element type
        return 0
    if any(d < 0 for d in shape):
        return 0
    return math.prod(shape) * item


def _elems(v: SSAValue | None) -> int:
    if v is None:
        return 0
    try:
        return math.prod(v.type.get_shape())  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001
        return 0


def matrix_macs(op: Operation) -> int:
    """Multiply-accumulates of a `MatrixCompute` graph op (dense)."""
    from nnx.dialects.graph import ConvOp, ConvTransposeOp, MatMulOp

    ins = op.onnx_inputs()  # type: ignore[attr-defined]
    out = op.onnx_outputs()[0]  # type: ignore[attr-defined]
    if isinstance(op, ConvOp):
        w = ins[1].type.get_shape()
        return _elems(out) * math.prod(w[1:])
    if isinstance(op, ConvTransposeOp):
        w = ins[1].type.get_shape()
        return _elems(ins[0]) * math.prod(w[1:])
    if isinstance(op, MatMulOp):
        return _elems(out) * ins[0].type.get_shape()[-1]
    a = ins[0].type.get_shape()  # Gemm
    return _elems(out) * (a[0] if op.attr("transA", 0) else a[1])  # type: ignore[attr-defined]


def link_unit(target: Target, direction: str) -> str:
    """The timeline unit of a host-link transfer ("D2H"/"H2D"; "LINK" if half duplex)."""
    return "LINK" if target.host_link.duplex == "half" else direction


def timeline_units(target: Target) -> dict[str, int]:
    """Unit kind -> instance count for `memory_timeline.simulate`."""
    units = {"MPU": target.unit("MPU").count, "VPU": target.unit("VPU").count}
    if target.host_link.duplex == "half":
        units["LINK"] = 1
    else:
        units["D2H"] = units["H2D"] = 1
    return units


def op_unit_cycles(target: Target, op: Operation) -> tuple[str, int]:
    """(timeline unit, cycles) of one graph op (see the module docstring)."""
    from nnx.dialects.graph import ConstantOp, GraphOp
    from nnx.dialects.graph_memory import SwapInOp, SwapOutOp

    if isinstance(op, ConstantOp) or not isinstance(op, GraphOp):
        return "", 0
    if isinstance(op, SwapOutOp):
        return link_unit(target, "D2H"), target.host_link.transfer_cycles(value_bytes(op.input))
    if isinstance(op, SwapInOp):
        return link_unit(target, "H2D"), target.host_link.transfer_cycles(value_bytes(op.input))
    if op.has_trait(ViewLike):
        return "", 0
    ins = [v for v in op.onnx_inputs() if v is not None]
    outs = [v for v in op.onnx_outputs() if v is not None]
    traffic = sum(value_bytes(v) for v in ins) + sum(value_bytes(v) for v in outs)
    mem = math.ceil(traffic / target.device.memory_bytes_per_cycle)
    if op.has_trait(MatrixCompute):
        return "MPU", max(target.mpu_cycles(matrix_macs(op)), mem)
    elems = max([_elems(v) for v in ins + outs] or [0])
    return "VPU", max(target.vpu_cycles(elems), mem)


@dataclass(frozen=True)
class BlockTimeline:
    """The timeline data of a block: `ops[i]` is `op_list[i]`; `value_ids` maps SSA
    values to indices of `values`."""

    ops: list[TimelineOp]
    values: list[TimelineValue]
    units: dict[str, int]
    op_list: list[Operation]
    value_ids: dict[SSAValue, int]


def block_timeline(block: Block, target: Target, rules: MemoryRules = DEFAULT_RULES) -> BlockTimeline:
    """Timeline data of a function body: arguments and constants are resident (the
    parameters and optimizer state of a training step), returned values are kept,
    swap_out results live on the host, views alias their input; then the accounting
    `rules` (nnx/memory_rules.py; `NONE` for the literal graph) apply."""
    from nnx.dialects.graph import ConstantOp, GraphOp
    from nnx.dialects.graph_memory import SwapOutOp

    values: list[TimelineValue] = []
    ids: dict[SSAValue, int] = {}
    returned: set[SSAValue] = set()
    for op in block.ops:
        if op.next_op is None:  # the terminator
            returned.update(op.operands)
    for a in block.args:
        ids[a] = len(values)
        values.append(TimelineValue(value_bytes(a), "resident"))
    ops: list[TimelineOp] = []
    op_list: list[Operation] = []
    op_index: dict[Operation, int] = {}
    for op in block.ops:
        if op.next_op is None:
            break
        unit, cycles = op_unit_cycles(target, op)
        view = op.has_trait(ViewLike)
        writes = []
        for r in op.results:
            ids[r] = len(values)
            writes.append(ids[r])
            if isinstance(op, ConstantOp):
                values.append(TimelineValue(value_bytes(r), "resident"))
            elif isinstance(op, SwapOutOp):
                values.append(TimelineValue(value_bytes(r), "host"))
            elif view and op.operands and op.operands[0] in ids:
                values.append(TimelineValue(0, "device", r in returned, ids[op.operands[0]]))
            else:
                values.append(TimelineValue(value_bytes(r), "device", r in returned))
        after = ()
        reads = tuple(ids[v] for v in op.operands if v in ids)
        if isinstance(op, GraphOp) and op.after:
            after = tuple(op_index[v.owner] for v in op.after if v.owner in op_index)
            data = [v for v in op.onnx_inputs() if v is not None]
            reads = tuple(ids[v] for v in data if v in ids)
        op_index[op] = len(ops)
        ops.append(TimelineOp(op.name, unit, cycles, reads, tuple(writes), after))
        op_list.append(op)
    # a kept alias keeps its root alive: mark the root kept
    for v in returned:
        i = ids.get(v)
        while i is not None and values[i].alias_of >= 0:
            i = values[i].alias_of
            values[i] = TimelineValue(values[i].nbytes, values[i].placement, True, values[i].alias_of)
    apply_rules(rules, op_list, ops, values, ids)
    return BlockTimeline(ops, values, timeline_units(target), op_list, ids)
