"""The functional parts of the simulated device (docs/architecture.md, section 9), each
decoding instructions into micro-instructions.

* `InstructionCache`       holds the program; gives each instruction its fetch-ready
                           cycle (T1 of docs/topological-order.md: instruction read
                           time from the fetch bandwidth, plus DMA refills from
                           storage).
* `InstructionControlUnit` decodes every instruction into a `MicroOp` for the unit
                           that executes it.
* `DirectMemoryAccess`     LOAD/STORE/MOVE between the storage unit and the caches
                           and GATHER (indirect DMA of indexed rows), executed on DAU
                           queues.
* `MappingUnit`            builds, converts and combines connection data and selects
                           the surviving elements (docs/sparse-mapping.md, section 5).
* `OperationUnit`          MPU and VPU compute on tiles; the meaning of every op is
                           `nnx.interp.kernels.run_kernel` (never re-implemented here).

A `MicroOp` carries a prepared closure over numpy views (no addressing work is left
for execution time), its cycle cost, and the byte ranges it reads and writes.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from nnx import connection_data as cd
from nnx.interp import kernels
from nnx.sim.isa import (
    MPU_KINDS,
    Instr,
    Tile,
    dense_macs,
    index_form,
    is_packed,
    weight_view,
)
from nnx.sim.memory import Memory, SimError
from nnx.target import Target

EXEC, WAIT, SIGNAL = 0, 1, 2


class MicroOp:
    __slots__ = (
        "index",
        "line",
        "unit",
        "name",
        "kind",
        "token",
        "fetch",
        "cycles",
        "run",
        "bytes",
        "macs",
        "dense_macs",
        "reads",
        "writes",
    )

    def __init__(self, ins: Instr, index: int, kind: int = EXEC):
        self.index = index
        self.line = ins.line
        self.unit = ins.unit
        self.name = ins.mnemonic
        self.kind = kind
        self.token = ins.token
        self.fetch = 0
        self.cycles = 0
        self.run: Callable[[], None] | None = None
        self.bytes = 0
        self.macs = 0
        self.dense_macs = 0
        self.reads: tuple = ()
        self.writes: tuple = ()


def _ranges(tiles: list[Tile | None]) -> tuple:
    return tuple((t.space, t.offset, t.end) for t in tiles if t is not None and t.space != "S")


class InstructionCache:
    """The instruction cache; instructions stream in from storage by DMA."""

    def __init__(self, target: Target):
        self.target = target

    def fetch_ready(self, n: int) -> np.ndarray:
        """Cycle at which instruction i has been fetched (and can be issued)."""
        ic = self.target.icache
        st = self.target.storage
        ib = ic.instruction_bytes
        i = np.arange(n, dtype=np.int64)
        refills = 1 + (i * ib) // ic.bytes
        bw = min(ic.fetch_bytes_per_cycle, st.dma_bytes_per_cycle)
        return refills * st.dma_latency_cycles + -(-((i + 1) * ib) // bw)


class DirectMemoryAccess:
    """Moves tiles between the storage unit and the caches (and cache to cache)."""

    def __init__(self, target: Target, mem: dict[str, Memory]):
        self.target = target
        self.mem = mem

    def decode(self, ins: Instr, mop: MicroOp) -> None:
        d, s = ins.dsts[0], ins.srcs[0]
        assert d is not None and s is not None
        dv, sv = self.mem[d.space].view(d), self.mem[s.space].view(s)
        mop.bytes = d.nbytes
        if ins.mnemonic == "GATHER":
            it = ins.srcs[1]
            assert it is not None
            iv = self.mem[it.space].view(it)
            rows = sv.shape[0]
            line = ins.line
            mop.cycles = self.target.instr_cycles(ins)

            def run_gather() -> None:
                idx = iv.astype(np.int64)
                bad = (idx < -rows) | (idx >= rows)
                if bad.any():
                    raise SimError(f"GATHER: index {int(idx[bad].flat[0])} out of range for {rows} rows", line)
                np.copyto(dv, sv[np.where(idx < 0, idx + rows, idx)])

            mop.run = run_gather
            mop.reads = _ranges([s, it])
            mop.writes = _ranges([d])
            return
        mop.cycles = self.target.instr_cycles(ins)

        def run() -> None:
            np.copyto(dv, sv)

        mop.run = run
        mop.reads = _ranges([s])
        mop.writes = _ranges([d])


# --------------------------------------------------------------------------------------
# Mapping unit
# --------------------------------------------------------------------------------------


def positions_of(view: np.ndarray, tile: Tile, line: int) -> np.ndarray:
    """Kept positions (row-major over the whole tile) of connection data of either form."""
    if index_form(tile) == "direct":
        return np.flatnonzero(view)
    try:
        return np.flatnonzero(cd.stride_to_direct(view))
    except cd.ConnectionDataError as e:
        raise SimError(f"malformed stride index at {tile.text()}: {e}", line) from None


class MappingUnit:
    """The mapping unit (docs/sparse-mapping.md, section 5): connection data (direct or
    stride index) and selection."""

    def __init__(self, target: Target, mem: dict[str, Memory]):
        self.target = target
        self.mem = mem

    def decode(self, ins: Instr, mop: MicroOp) -> None:
        v = lambda t: self.mem[t.space].view(t)  # noqa: E731
        d = ins.dsts[0]
        assert d is not None
        dv = v(d)
        srcs = [t for t in ins.srcs if t is not None]
        svs = [v(t) for t in srcs]
        line = ins.line
        mn = ins.mnemonic
        dform = index_form(d)

        def guard(fn: Callable[[], None]) -> Callable[[], None]:
            def run() -> None:
                try:
                    fn()
                except cd.ConnectionDataError as e:
                    raise SimError(f"{mn}: {e}", line) from None

            return run

        if mn == "CONN":
            th = float(ins.attrs["threshold"])
            order_in = ins.attrs.get("order", "out") == "in"
            sv = svs[0]
            build = cd.direct_index if dform == "direct" else cd.stride_index

            def run() -> None:
                dv[...] = build(sv.T if order_in else sv, th)

        elif mn == "CONVERT":
            sv, st = svs[0], srcs[0]
            sform = index_form(st)
            if st.shape != d.shape:  # unpadded 1-D stride string -> 1-D direct string
                n = d.nelems

                def run() -> None:
                    if sv.size and sv.min() < 0:
                        raise SimError(f"CONVERT: malformed stride index at {st.text()}", line)
                    pos = np.cumsum(sv, dtype=np.int64)
                    if pos.size and pos[-1] >= n:
                        raise SimError(f"CONVERT: stride index points past the end of its {n}-element string", line)
                    dv[...] = 0
                    dv[pos] = 1

            else:

                @guard
                def run() -> None:
                    dv[...] = cd.convert(sv, sform, dform)

        elif mn == "COMBINE":
            (av, bv), (at, bt) = svs, srcs
            fa, fb = index_form(at), index_form(bt)

            @guard
            def run() -> None:
                res, form = cd.combine(av, fa, bv, fb, mixed=dform)
                dv[...] = res if form == dform else cd.convert(res, form, dform)

        elif mn == "EXPAND":
            (vals, cv), (vt, ct) = svs, srcs
            n = d.nelems

            def run() -> None:
                pos = positions_of(cv, ct, line)
                if pos.size > vals.size:
                    raise SimError(f"EXPAND: {pos.size} kept positions, only {vals.size} values", line)
                flat = np.zeros(n, dtype=dv.dtype)
                flat[pos] = vals[: pos.size]
                dv[...] = flat.reshape(dv.shape)

        elif mn == "COMPACT":
            (sv, cv), (st, ct) = svs, srcs
            cap = d.nelems

            def run() -> None:
                pos = positions_of(cv, ct, line)
                if pos.size > cap:
                    raise SimError(f"COMPACT: {pos.size} kept positions, room for {cap}", line)
                dv[: pos.size] = sv.reshape(-1)[pos]
                dv[pos.size :] = 0

        else:  # pragma: no cover - the ISA check rejects it
            raise SimError(f"mapping unit cannot execute {mn}", line)
        mop.run = run
        mop.cycles = self.target.instr_cycles(ins)
        mop.reads = _ranges(srcs)
        mop.writes = _ranges([d])


# --------------------------------------------------------------------------------------
# Operation unit (MPU, VPU)
# --------------------------------------------------------------------------------------

_MASKABLE = ("Conv", "MatMul", "Gemm")


def _store(dsts: list[np.ndarray], outs: list[Any], acc: bool, kind: str, line: int) -> None:
    if len(outs) < len(dsts):
        raise SimError(f"{kind} produced {len(outs)} results for {len(dsts)} destinations", line)
    for i, dv in enumerate(dsts):
        o = np.asarray(outs[i])
        if o.shape != dv.shape:
            raise SimError(
                f"{kind} result #{i} has shape {'x'.join(map(str, o.shape)) or 'scalar'}, "
                f"the destination tile {'x'.join(map(str, dv.shape)) or 'scalar'}",
                line,
            )
        if o.dtype != dv.dtype and not np.can_cast(o.dtype, dv.dtype, "same_kind"):
            raise SimError(f"{kind} result #{i} has element type {o.dtype}, the destination {dv.dtype}", line)
        if acc:
            dv += o
        else:
            dv[...] = o


class OperationUnit:
    """MPU (matrix/conv) and VPU (vector) instructions on cache tiles."""

    def __init__(self, target: Target, mem: dict[str, Memory]):
        self.target = target
        self.mem = mem

    def decode(self, ins: Instr, mop: MicroOp) -> None:
        v = lambda t: None if t is None else self.mem[t.space].view(t)  # noqa: E731
        kind = ins.mnemonic
        line = ins.line
        dsts = [v(t) for t in ins.dsts]
        srcs = [v(t) for t in ins.srcs]
        acc = bool(ins.opts.get("acc"))
        reads = list(ins.srcs) + [ins.opts.get("nmask"), ins.opts.get("wmask")]
        if acc:
            reads += list(ins.dsts)
        mop.reads = _ranges(reads)
        mop.writes = _ranges(list(ins.dsts))

        if kind == "FILL":
            dv = dsts[0]
            value = ins.attrs["value"]

            def run_fill() -> None:
                dv[...] = value

            mop.run = run_fill
            mop.cycles = self.target.instr_cycles(ins)
            return

        if kind not in kernels.KERNELS:
            raise SimError(f"no kernel for ONNX operator {kind}", line)
        attrs = dict(ins.attrs)

        def call(inputs: list[Any]) -> list[Any]:
            try:
                if kind == "MatMul" and len(inputs) == 3:
                    # C initialises the accumulators: A @ B + C (broadcast, as Gemm's C)
                    y = kernels.run_kernel(kind, inputs[:2], attrs)[0]
                    if inputs[2] is not None:
                        y = y + inputs[2]
                    return [y]
                return kernels.run_kernel(kind, inputs, attrs)
            except SimError:
                raise
            except Exception as e:  # noqa: BLE001 - any kernel failure is the program's
                raise SimError(f"{kind} failed: {e}", line) from None

        if kind not in MPU_KINDS:
            mop.cycles = self.target.instr_cycles(ins)

            def run_vpu() -> None:
                _store(dsts, call(srcs), acc, kind, line)

            mop.run = run_vpu
            return

        # ---- MPU ----------------------------------------------------------------------
        dense = dense_macs(ins)
        mop.dense_macs = dense
        mop.macs = dense
        mop.cycles = self.target.instr_cycles(ins, dense)
        nm_t, wm_t = ins.opts.get("nmask"), ins.opts.get("wmask")
        if nm_t is None and wm_t is None:

            def run_mpu() -> None:
                _store(dsts, call(srcs), acc, kind, line)

            mop.run = run_mpu
            return
        if kind not in _MASKABLE:
            raise SimError(f"{kind}: sparse masks are supported on {', '.join(_MASKABLE)} only", line)
        nm, wm = v(nm_t), v(wm_t)
        target = self.target
        packed = is_packed(ins)
        a_t, b_t = weight_view(ins)[0], weight_view(ins)[1]
        assert a_t is not None and b_t is not None

        def executed(nmv: np.ndarray | None, wmv: np.ndarray | None) -> int:
            if kind == "Conv":
                if nmv is None:
                    positions = ins.dsts[0].nelems // ins.dsts[0].shape[1]  # type: ignore[union-attr]
                    return positions * int(np.count_nonzero(wmv))
                wf = np.ones(b_t.shape, np.float32) if wmv is None else wmv.astype(np.float32)
                cnt = kernels.run_kernel("Conv", [nmv.astype(np.float32), wf], attrs)[0]
                return int(round(float(cnt.sum(dtype=np.float64))))
            # MatMul / Gemm: pairs (a[m,k], b[k,n]) both kept
            am = None if nmv is None else nmv
            bm = None if wmv is None else wmv
            if kind == "Gemm":
                if am is not None and attrs.get("transA", 0):
                    am = am.T
                if bm is not None and attrs.get("transB", 0):
                    bm = bm.T
            k = a_t.shape[0] if (kind == "Gemm" and attrs.get("transA", 0)) else a_t.shape[-1]
            if am is None and bm is not None and len(b_t.shape) == 2:
                return (a_t.nelems // k) * int(np.count_nonzero(bm))
            if bm is None and am is not None and b_t.ndim == 2:
                n_out = b_t.shape[0] if (kind == "Gemm" and attrs.get("transB", 0)) else b_t.shape[-1]
                return n_out * int(np.count_nonzero(am))
            af = np.ones(a_t.shape, np.float32) if am is None else am.astype(np.float32)
            if am is None and kind == "Gemm" and attrs.get("transA", 0):
                af = af.T
            bf = np.ones(b_t.shape, np.float32) if bm is None else bm.astype(np.float32)
            if bm is None and kind == "Gemm" and attrs.get("transB", 0):
                bf = bf.T
            return int(round(float(np.matmul(af, bf).sum(dtype=np.float64))))

        wshape = b_t.shape

        def run_sparse() -> None:
            # the mapping unit's selection: only surviving neurons/weights take part
            ins_ = list(srcs)
            if nm is not None:
                ins_[0] = np.where(nm, ins_[0], np.zeros((), ins_[0].dtype))
            if packed:
                # compacted weights: the surviving values, row-major over wmask
                keep = wm.reshape(-1) != 0
                nk = int(np.count_nonzero(keep))
                vals = ins_[1]
                if nk > vals.size:
                    raise SimError(f"{kind}: wmask keeps {nk} weights, the packed tile holds {vals.size}", line)
                full = np.zeros(keep.size, vals.dtype)
                full[keep] = vals[:nk]
                ins_[1] = full.reshape(wshape)
            elif wm is not None:
                ins_[1] = np.where(wm, ins_[1], np.zeros((), ins_[1].dtype))
            _store(dsts, call(ins_), acc, kind, line)
            ex = executed(nm, wm)
            mop.macs = ex
            mop.cycles = target.mpu_cycles(ex)

        mop.run = run_sparse


class InstructionControlUnit:
    """Decodes instructions into micro-instructions for the unit that executes them."""

    def __init__(self, target: Target, mem: dict[str, Memory]):
        self.target = target
        self.icache = InstructionCache(target)
        self.dma = DirectMemoryAccess(target, mem)
        self.mapping = MappingUnit(target, mem)
        self.operation = OperationUnit(target, mem)
        self._units = set(target.unit_names())

    def decode(self, ins: Instr, index: int) -> MicroOp:
        if ins.unit not in self._units:
            raise SimError(
                f"unit {ins.unit} does not exist in target '{self.target.name}' "
                f"(units: {', '.join(sorted(self._units))})",
                ins.line,
            )
        mn = ins.mnemonic
        if mn == "WAIT":
            return MicroOp(ins, index, WAIT)
        if mn == "SIGNAL":
            return MicroOp(ins, index, SIGNAL)
        mop = MicroOp(ins, index)
        try:
            ut = ins.unit_type
            if ut == "DAU":
                self.dma.decode(ins, mop)
            elif ut == "MAP":
                self.mapping.decode(ins, mop)
            else:
                self.operation.decode(ins, mop)
        except SimError as e:
            raise SimError(e.msg, e.line or ins.line) from None
        return mop

    def decode_program(self, instrs: list[Instr]) -> list[MicroOp]:
        ready = self.icache.fetch_ready(len(instrs))
        out = []
        for i, ins in enumerate(instrs):
            m = self.decode(ins, i)
            m.fetch = int(ready[i])
            out.append(m)
        return out


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


__all__ = [
    "MicroOp",
    "InstructionCache",
    "InstructionControlUnit",
    "DirectMemoryAccess",
    "MappingUnit",
    "OperationUnit",
    "EXEC",
    "WAIT",
    "SIGNAL",
]
