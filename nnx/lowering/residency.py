"""On-chip chaining: which results stay resident in the caches, liveness over the op
order, eviction (one STORE) and write-back of graph outputs (README "How lower-to-chip
uses the caches")."""

from __future__ import annotations

from xdsl.ir import SSAValue

from nnx.lowering.cache import CacheHeap
from nnx.lowering.storage import _align, is_alias, StorageAllocator, Tensor
from nnx.lowering.stream import InstructionStream
from nnx.sim.isa import Instr, Tile
from nnx.tiling import Box, full_box


def box_acc(t: Tensor, box: Box, ct: Tile) -> tuple:
    """The dependency access of the tile `ct` of `box` of a resident tensor."""
    bounds = tuple((s, s + (n - 1) * st + 1) for s, n, st in box)
    return (ct.space, ct.offset, ct.end, (t.offset, t.shape, bounds))


class Residency:
    """The resident (chained) results of one lowering: a top-down heap per cache (O,
    N), the alias roots, the op indices that read each root (liveness), the roots
    that must reach storage (graph outputs), and the output tile shape of each
    resident result. Evictions and write-backs are STOREs on `stream` to the
    tensor's buffer in `store`."""

    def __init__(self, target, store: StorageAllocator, stream: InstructionStream, chain: bool, next_fit: bool) -> None:
        self.store = store
        self.stream = stream
        self.chain = chain
        self.caps = {s: target.cache_bytes(s) for s in ("N", "W", "O")}
        self.heaps = {s: CacheHeap(self.caps[s], next_fit=next_fit) for s in ("O", "N")}
        self.res: dict = {}  # root -> space
        self.root: dict[SSAValue, SSAValue] = {}
        self.uses: dict = {}  # root -> op indices reading it
        self.must_store: set = set()
        self.idx = 0  # the index of the op being lowered
        # output tile shape of each resident result (compute.follow_tiles)
        self.tile_shape: dict = {}

    def rootof(self, v: SSAValue):
        return self.root.get(v, v)

    def tensor(self, v: SSAValue, op=None) -> Tensor:
        """Where `v` is now: its cache buffer when resident, else its storage."""
        t = self.store.storage(v, op)
        sp = self.res.get(self.rootof(v))
        if sp is not None:
            lo, _ = self.heaps[sp].live[self.rootof(v)]
            return Tensor(lo, t.shape, t.dtype, None, sp, t.strides)
        return t

    def liveness(self, block, views: set) -> None:
        """Roots of alias chains, the op indices that read each root, and the roots that
        must reach storage (graph outputs). `views`: the Transpose ops lowered as
        strided views (aliases too; passes/graph_transpose_views.py)."""
        from xdsl.dialects import func as fdialect

        from nnx.dialects.graph import GraphOp

        for idx, op in enumerate(block.ops):
            if isinstance(op, fdialect.ReturnOp):
                # graph outputs: written back to storage as soon as they are complete
                # (and still resident for their other readers)
                self.must_store.update(self.rootof(v) for v in op.arguments)
                continue
            if isinstance(op, GraphOp):
                if is_alias(op) or op in views:
                    ins = op.onnx_inputs()
                    outs = op.onnx_outputs()
                    if ins and ins[0] is not None and outs and outs[0] is not None:
                        # an alias reads nothing: its readers read the root
                        self.root[outs[0]] = self.rootof(ins[0])
                        continue
            for v in op.operands:
                self.uses.setdefault(self.rootof(v), []).append(idx)

    def next_use(self, root) -> int:
        for i in self.uses.get(root, ()):
            if i > self.idx:
                return i
        return 1 << 60

    def release_dead(self) -> None:
        """Free the buffers of resident tensors that no later op reads."""
        for r in [r for r in self.res if max(self.uses.get(r, [-1])) < self.idx]:
            self.heaps[self.res.pop(r)].free(r)

    def evict(self, root) -> None:
        """STORE a resident tensor to its storage (unless a graph output, already
        written back) and free its cache buffer."""
        if root not in self.must_store:
            self.write_back(root)
        self.heaps[self.res.pop(root)].free(root)

    def write_back(self, root) -> None:
        """One STORE of a resident tensor to its storage address."""
        sp = self.res[root]
        lo, _ = self.heaps[sp].live[root]
        st = self.store.storage(root)
        ct = Tensor(lo, st.shape, st.dtype, None, sp)
        full = full_box(st.shape)
        self.stream.emit(
            Instr(self.stream.next_unit("DAU"), "STORE", [st.tile(full)], [ct.tile(full)]),
            [ct.access()], [("S", st.key)],
        )

    def make_resident(self, v: SSAValue, protect: set) -> bool:
        """Give `v` (a fresh result) a cache buffer, evicting residents used furthest in
        the future (never those in `protect`) when that makes room."""
        if not self.chain or not self.uses.get(v):
            return False
        t = self.store.storage(v)
        n = t.nbytes
        for sp in ("O", "N"):
            if _align(n) > self.caps[sp] - self.reserve(sp):
                continue  # leave room for the working sets
            lo = self.heaps[sp].alloc(v, n, self.reserve(sp))
            if lo is not None:
                self.res[v] = sp
                return True
        # evict residents that are needed later than `v` is
        mine = self.next_use(v)
        for sp in ("O", "N"):
            if _align(n) > self.caps[sp] - self.reserve(sp):
                continue
            cands = sorted((r for r, s2 in self.res.items() if s2 == sp and r not in protect),
                           key=lambda r: -self.next_use(r))
            for r in cands:
                if self.next_use(r) <= mine:
                    break
                self.evict(r)
                lo = self.heaps[sp].alloc(v, n, self.reserve(sp))
                if lo is not None:
                    self.res[v] = sp
                    return True
        return False

    def reserve(self, sp: str) -> int:
        """Bytes at the bottom of a cache kept for the working sets (op slots): 1/8 of
        it (an op that needs more evicts residents, see lower_compute)."""
        return self.caps[sp] // 8

    def drop_resident(self, v: SSAValue) -> None:
        sp = self.res.pop(v, None)
        if sp is not None:
            self.heaps[sp].free(v)

    def work_caps(self) -> dict[str, int]:
        caps = dict(self.caps)
        for sp, h in self.heaps.items():
            caps[sp] = h.floor()
        return caps
