"""The lowering of one function's graph (+ sparse) ops to chip instructions.

`Lowering.run(func)` walks the ops in block order (the schedule), allocates storage,
decides residency, tiles each op and emits its instructions with their exact
accesses; `build_program()` returns them as a `chip.program` in emitted order (the
input of chip-allocate, chip-schedule and chip-sync; see passes/chip_lower.py).
The work is split by concern over the modules of this package: residency.py,
fusion.py, group_chain.py, data_movement.py, compute.py, sparse_weights.py; storage
tensors in storage.py, cache slots and heaps in cache.py, dependencies in deps.py.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.ir import Operation, SSAValue

from nnx.lowering.errors import LoweringError
from nnx.lowering.cache import CacheHeap
from nnx.lowering.storage import _dtype_name, _py, ALIAS_KINDS, StorageAllocator, Tensor
from nnx.sim.isa import Instr, Tile
from nnx.tiling import TilingError
from nnx.lowering.compute import ComputeTiling
from nnx.lowering.data_movement import DataMovement
from nnx.lowering.deps import ACCESS_ATTR, SEQ_ATTR, format_accesses
from nnx.lowering.fusion import Fusion
from nnx.lowering.group_chain import GroupChain
from nnx.lowering.residency import Residency
from nnx.lowering.sparse_weights import SparseWeights


class EmittedInstructions:
    """The instructions in emitted order with the accesses each reads and writes
    (nnx/lowering/deps.py turns them into dependencies)."""

    def __init__(self) -> None:
        self.entries: list[tuple[Instr, list, list]] = []

    def emit(self, ins: Instr, reads: list[tuple], writes: list[tuple]) -> int:
        """Append `ins`; reads/writes: ('N'|'W'|'O', lo, hi[, box]) or ('S', key)."""
        self.entries.append((ins, list(reads), list(writes)))
        return len(self.entries) - 1


class Lowering(Residency, Fusion, GroupChain, DataMovement, ComputeTiling, SparseWeights):
    """The state of one lowering of a function: the target, the options, storage
    allocation (tensors, constants, names), the resident buffers and the emitted
    instructions. The methods of each concern live in their own module (mixins)."""

    def __init__(self, target, double_buffer: bool, max_tile: int, chain: bool = True, schedule: bool = True):
        self.target = target
        self.schedule = schedule
        self.double_buffer = double_buffer
        self.max_tile = max_tile
        self.chain = chain
        self.caps = {s: target.cache_bytes(s) for s in ("N", "W", "O")}
        # on-chip chaining: resident tensors (by root value: aliases share the root)
        self.heaps = {s: CacheHeap(self.caps[s], next_fit=schedule) for s in ("O", "N")}
        self.res: dict[Any, str] = {}  # root -> space
        self.root: dict[SSAValue, SSAValue] = {}
        self.uses: dict[Any, list[int]] = {}  # root -> op indices reading it
        self.must_store: set = set()
        self.idx = 0
        self.flip = 0
        self.stream = EmittedInstructions()
        self.store = StorageAllocator()
        self.tensors: dict[SSAValue, Tensor] = {}
        self.inputs: list[tuple[str, Tensor]] = []
        self.outputs: list[tuple[str, Tensor]] = []
        self.fused: set[Operation] = set()
        # epilogue operands read through a view of the op's output (bias_gemm)
        self.epi_views: dict[tuple[Operation, int], tuple[int, ...]] = {}
        # output tile shape of each resident result (follow_tiles)
        self.tile_shape: dict[Any, tuple[int, ...]] = {}
        dau = target.unit("DAU").count
        self.load_unit = "DAU0"
        self.store_unit = f"DAU{dau - 1}"
        self.mpu = "MPU0"
        self.vpu = "VPU0"
        self.map = "MAP0"
        self.counts = {u: (target.unit(u).count if u != "MAP" else target.mapping.count) for u in ("DAU", "MPU", "VPU", "MAP")}
        self.rr = {u: 0 for u in self.counts}

    def next_unit(self, ut: str) -> str:
        """Round-robin over the target's instances of a unit type."""
        i = self.rr[ut]
        self.rr[ut] = (i + 1) % self.counts[ut]
        return f"{ut}{i}"

    def next_load_unit(self) -> str:
        return self.next_unit("DAU")

    def const_array(self, arr: np.ndarray, hint: str = "c") -> Tensor:
        """A constant in storage holding `arr` (deduplicated)."""
        return self.store.const_array(arr, hint)

    def rootof(self, v: SSAValue):
        return self.root.get(v, v)

    def tensor(self, v: SSAValue, op: Operation | None = None) -> Tensor:
        """Where `v` is now: its cache buffer when resident, else its storage."""
        t = self.storage(v, op)
        sp = self.res.get(self.rootof(v))
        if sp is not None:
            lo, _ = self.heaps[sp].live[self.rootof(v)]
            return Tensor(lo, t.shape, t.dtype, None, sp, t.strides)
        return t

    def storage(self, v: SSAValue, op: Operation | None = None) -> Tensor:
        t = self.tensors.get(v)
        if t is not None:
            return t
        from nnx.dialects.graph import ConstantOp

        owner = v.owner
        if isinstance(owner, ConstantOp):
            ty = v.type
            shape = tuple(ty.get_shape())  # type: ignore[attr-defined]
            dt = _dtype_name(ty)
            hint = "w"
            loc = getattr(owner, "location", None)
            m = re.fullmatch(r'loc\("([^"]+)"\)', str(loc)) if loc is not None else None
            if m:
                hint = m.group(1)
            t = self.store.constant(owner.value, shape, dt, hint)
            self.tensors[v] = t
            return t
        raise LoweringError(f"operand of {op.name if op else 'an op'} has no storage", op)

    def run(self, func) -> None:
        from xdsl.dialects import func as fdialect

        from nnx.dialects.graph import ConstantOp, GraphOp

        block = func.body.block
        self.returned = set()
        for o in block.ops:
            if isinstance(o, fdialect.ReturnOp):
                self.returned.update(o.arguments)
        arg_attrs = func.arg_attrs.data if func.arg_attrs is not None else None
        for i, arg in enumerate(block.args):
            name = f"arg{i}"
            if arg_attrs is not None and i < len(arg_attrs):
                n = arg_attrs[i].data.get("nnx.name")
                if isinstance(n, StringAttr):
                    name = n.data
            t = self.store.allocate(tuple(arg.type.get_shape()), _dtype_name(arg.type), "input")  # type: ignore[attr-defined]
            self.tensors[arg] = t
            self.inputs.append((self.store.fresh(name), t))
        # the outputs' names are reserved before any constant is named (a constant
        # must not take a graph output's name)
        res_attrs = func.res_attrs.data if func.res_attrs is not None else None
        ret = next((o for o in block.ops if isinstance(o, fdialect.ReturnOp)), None)
        out_names = []
        for i in range(len(ret.arguments) if ret is not None else 0):
            name = f"out{i}"
            if res_attrs is not None and i < len(res_attrs):
                n = res_attrs[i].data.get("nnx.name")
                if isinstance(n, StringAttr):
                    name = n.data
            out_names.append(self.store.fresh(name))
        if self.schedule:
            self.hoist_acc_operands(block)
        self.liveness(block)
        for idx, op in enumerate(block.ops):
            self.idx = idx
            if isinstance(op, ConstantOp) or op in self.fused:
                continue
            self.release_dead()
            if isinstance(op, fdialect.ReturnOp):
                for i, v in enumerate(op.arguments):
                    self.outputs.append((out_names[i], self.storage(v, op)))
                continue
            try:
                if op.name.startswith("sparse."):
                    self.lower_sparse(op)
                elif isinstance(op, GraphOp):
                    self.lower_graph(op)
                else:
                    raise LoweringError(f"cannot lower {op.name}", op)
            except TilingError as e:
                raise LoweringError(f"{op.name} does not fit the caches: {e}", op) from None
            except ValueError as e:
                raise LoweringError(f"{op.name}: {e}", op) from None

    def result_tensor(self, v: SSAValue) -> Tensor:
        t = self.store.allocate(tuple(v.type.get_shape()), _dtype_name(v.type), "intermediate")  # type: ignore[attr-defined]
        self.tensors[v] = t
        return t

    def lower_graph(self, op) -> None:
        kind = op.ONNX_TYPE
        ins = op.onnx_inputs()
        outs = op.onnx_outputs()
        attrs = {k: _py(v) for k, v in op.onnx_attributes().items()}
        if any(o is None for o in outs):
            raise LoweringError(f"{op.name} with an absent optional output in the middle is not supported", op)
        if self.transpose_view(op):
            src = self.storage(ins[0], op)
            r = len(src.shape)
            perm = [int(p) for p in attrs.get("perm", list(range(r))[::-1])]
            self.tensors[outs[0]] = src.permuted(perm)
            return
        # aliases: same bytes, new shape
        if kind in ALIAS_KINDS or (kind == "Dropout" and (len(outs) == 1 or not outs[1].uses)):
            src = self.storage(ins[0], op)  # the storage view; residency goes by the root
            for o in outs[:1]:
                self.tensors[o] = src.view(tuple(o.type.get_shape()))
            if len(outs) > 1:
                # the (unused) mask of an inference Dropout: all true
                self.tensors[outs[1]] = self.const_array(np.ones(outs[1].type.get_shape(), np.bool_), "mask")
            return
        for v in ins:
            if v is not None:
                self.tensor(v, op)
        if kind == "Concat":
            return self.lower_concat(op, ins, outs, attrs)
        if kind == "Split":
            return self.lower_split(op, ins, outs, attrs)
        if kind == "Slice" and self.lower_slice(op, ins, outs, attrs):
            return
        if kind == "Gather" and self.lower_gather(op, ins, outs, attrs):
            return
        if kind == "Conv" and self.try_group_chain(op):
            return
        epi = self.epilogue_chain(op, outs) if len(outs) == 1 else []
        bg = self.bias_gemm(ins[0], ins[1], epi) if kind == "MatMul" else None
        if bg is not None:
            gins, views, out_view, rest = bg
            last = rest[-1][0] if rest else epi[0][0]
            self.lower_compute(op, "Gemm", gins, [last.onnx_outputs()[0]], {}, None, views, out_view, epilogue=rest)
            return
        ai = self.acc_init(ins[0], ins[1], epi) if kind == "MatMul" and self.schedule else None
        if ai is not None:
            mins, rest = ai
            last = rest[-1][0] if rest else epi[0][0]
            self.lower_compute(op, kind, mins, [last.onnx_outputs()[0]], attrs, epilogue=rest)
            return
        if epi:
            self.lower_compute(op, kind, ins, [epi[-1][0].onnx_outputs()[0]], attrs, epilogue=epi)
            return
        self.lower_compute(op, kind, ins, outs, attrs)

    # ---- program ----------------------------------------------------------------------
    def build_program(self):
        """The chip.program of everything emitted: a `chip.buffer` per storage tensor
        (in allocation order), the storage symbols pointing into them, then the
        instructions in emitted order, each with its exact accesses (`nnx.access`) and
        sequential position (`nnx.seq`); storage tiles are `@buffer:offset` (no
        addresses yet: passes/chip_allocate.py), no SIGNAL/WAIT yet."""
        from nnx.dialects.chip import BufferOp, ConstOp, InputOp, OutputOp, ProgramOp, TileAttr, instr_op

        def sym_tile(t: Tensor) -> Tile:
            return Tile(t.tile_space, t.offset, t.shape, t.dtype)

        for _, t in self.outputs:
            buf = self.store.buffer(t.buffer)
            if buf.kind == "intermediate":
                buf.kind = "output"
        ops: list[Operation] = [
            BufferOp.create(properties={"sym_name": StringAttr(b.name), "bytes": IntegerAttr(b.nbytes, i64),
                                        "kind": StringAttr(b.kind)})
            for b in self.store.buffers
        ]
        for name, t in self.inputs:
            ops.append(InputOp.create(properties={"sym_name": StringAttr(name), "tile": TileAttr.of(sym_tile(t))}))
        for name, t, value in self.store.consts:
            ops.append(ConstOp.create(properties={"sym_name": StringAttr(name), "tile": TileAttr.of(sym_tile(t)), "value": value}))
        for name, t in self.outputs:
            ops.append(OutputOp.create(properties={"sym_name": StringAttr(name), "tile": TileAttr.of(sym_tile(t))}))
        for seq, (ins, reads, writes) in enumerate(self.stream.entries):
            op = instr_op(ins)
            op.attributes[ACCESS_ATTR] = StringAttr(format_accesses(reads, writes))
            op.attributes[SEQ_ATTR] = IntegerAttr(seq, i64)
            ops.append(op)
        return ProgramOp(0, ops, target=self.target.name)
