"""Dependencies between chip instructions, and SIGNAL/WAIT from them.

Every instruction reads and writes *accesses*:

* a cache byte range `(SPACE, lo, hi)` with SPACE in N/W/O, optionally narrowed by
  an element *box* of a resident buffer, `(SPACE, lo, hi, (base, shape, bounds))`:
  the buffer's cache address and shape and per-dimension `[start, end)` element
  bounds. Two boxes of one buffer that do not intersect are independent although
  their strided byte spans interleave;
* a storage tensor: `("S", name)`, its `chip.buffer` (before chip-allocate), or
  `("S", (lo, hi))`, the allocation at those addresses: the whole tensor is one
  dependency granule.

`DependencyTracker` turns the accesses of instructions in program order into each
instruction's predecessors: read-after-write, write-after-read and write-after-write,
with a write's covered records killed (later readers depend on the newest writer
only), less the edges that others imply without changing a schedule or a SIGNAL/WAIT
(see the class). `sync_tokens` places SIGNAL/WAIT for a given order of the
instructions.

On chip IR the accesses of an instruction come from its `nnx.access` attribute when
it has one (chip-lower writes it: the lowering knows the exact ranges, boxes and
storage allocations), else from its tiles (sources and masks are read, destinations
written, `acc` destinations read too; a storage tile is its own granule).
`instruction_dependencies(program)` gives any pass -- the built-in `chip-schedule`,
`chip-sync` or a plugin scheduler -- the dependency DAG of a `chip.program`, indexed
by block position. The dependencies are those of the program's sequential order
(`nnx.seq`, chip-lower's emission order; the block order when absent): a scheduler
may reorder the block freely within them, and chip-sync after it sees the same DAG.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from nnx.sim.isa import Instr

ACCESS_ATTR = "nnx.access"
"""Discardable attribute of a chip instruction op: its exact reads and writes (see
`format_accesses`); written by chip-lower, dropped by chip-sync."""

SEQ_ATTR = "nnx.seq"
"""Discardable integer attribute of a chip instruction op: its position in the
program's *sequential* order, the order whose meaning the program has (chip-lower's
emission order). Dependencies are computed in that order wherever the block has been
reordered since (a schedule); dropped by chip-sync."""

Access = tuple  # ("N"|"W"|"O", lo, hi[, box]), ("S", buffer name) or ("S", (lo, hi))


# --------------------------------------------------------------------------------------
# The dependency tracker (pure: accesses in, predecessor lists out)
# --------------------------------------------------------------------------------------


def _boxes_overlap(a, b) -> bool:
    """May two boxes of resident buffers share an element? (None: not a box)"""
    if a is None or b is None or a[0] != b[0] or a[1] != b[1]:
        return True
    return all(s1 < e2 and s2 < e1 for (s1, e1), (s2, e2) in zip(a[2], b[2]))


def _box_covers(a, b) -> bool:
    """Does box `a` hold every element of box `b`?"""
    if a is None or b is None or a[0] != b[0] or a[1] != b[1]:
        return False
    return all(s1 <= s2 and e2 <= e1 for (s1, e1), (s2, e2) in zip(a[2], b[2]))


class DependencyTracker:
    """The last writer and the readers since, per cache byte range and per storage
    allocation; `add` gives an instruction's predecessors (indices, sorted), reduced.

    Of the full set (the writer and readers of every record an access overlaps), a
    predecessor `p` of `i` is left out when another predecessor `q` of `i` depends
    on `p` (transitively) and either `q` runs on `p`'s unit or `p` runs on `i`'s.
    Such an edge changes nothing downstream: `i` cannot start before `q` has
    finished, which is after `p` has (costs are not negative), so the transitive
    closure, longest paths, makespans and list schedules are those of the full set;
    and of `i`'s predecessors on another unit `sync_tokens` only looks at the last
    in that unit's queue, which in any topological order is never one with a
    same-unit successor among them. The full set is quadratic where the boxes of a
    resident buffer rewrite an earlier buffer's range piece by piece (every box
    write collects every earlier reader of the range); the reduced one stays close
    to linear.

    Reachability is one integer bit set of ancestors per instruction (over the
    reduced edges: the same closure). The readers registered on a record are
    thinned the same way (per unit, only those no later same-unit reader of the
    record depends on) when a write collects them after they have doubled.
    `reduce=False` gives the full set (the definition the reduced one is tested
    against)."""

    def __init__(self, reduce: bool = True) -> None:
        self.reduce = reduce
        self.count = 0
        # cache records per space, grouped by the resident buffer their box belongs
        # to ((base, shape); None: records without a box): group key -> [lo, hi,
        # records], lo/hi spanning every record of the group (an access whose bytes
        # miss the span skips the group). A record: [lo, hi, writer index | None,
        # reader indices, box, number of readers when last thinned]
        self.cache_groups: dict[str, dict[Any, list]] = {"N": {}, "W": {}, "O": {}}
        # storage records: key -> [writer index | None, reader indices, thinned count]
        self.s_recs: dict[Any, list] = {}
        self.units: list[str] = []
        self.ancestors: list[int] = []  # bit p of ancestors[i]: p ->+ i

    @property
    def cache_recs(self) -> dict[str, list[list]]:
        """Every cache record per space (the groups' records, flattened)."""
        return {sp: [rec for g in groups.values() for rec in g[2]] for sp, groups in self.cache_groups.items()}

    def _thin(self, readers: list[int]) -> None:
        """Drop from `readers` (ascending; in place) those a later same-unit reader
        in it depends on."""
        if len(readers) < 2 or not self.reduce:
            return
        units, anc = self.units, self.ancestors
        cover: dict[str, int] = {}
        keep = []
        for r in reversed(readers):
            u = units[r]
            c = cover.get(u, 0)
            if not (c >> r) & 1:
                keep.append(r)
                # (a dropped reader's ancestors are in the cover already; the
                # instruction being added, a reader too, has none yet)
                if r < len(anc):
                    cover[u] = c | anc[r]
        if len(keep) != len(readers):
            keep.reverse()
            readers[:] = keep

    def add(self, reads: Sequence[Access], writes: Sequence[Access], unit: str = "") -> list[int]:
        """Append one instruction (running on `unit`) with these accesses; its
        (reduced) predecessors.

        One pass over the records per access (the overlap test inlined; a group of
        records whose byte span the access misses is skipped whole, and the boxes
        are compared only within the access's own buffer): reads collect the last
        writer and register as readers at once; a write collects the writer and
        readers of what it overlaps (this instruction's own reads among them,
        dropped at the end) and replaces the records it kills."""
        idx = self.count
        self.count += 1
        self.units.append(unit)
        deps: set[int] = set()
        add = deps.add
        thin = self._thin
        s_recs = self.s_recs
        cache_groups = self.cache_groups
        for acc in reads:
            if acc[0] == "S":
                rec = s_recs.get(acc[1])
                if rec is None:
                    s_recs[acc[1]] = [None, [idx], 0]
                else:
                    if rec[0] is not None:
                        add(rec[0])
                    rec[1].append(idx)
                continue
            lo, hi = acc[1], acc[2]
            bx = acc[3] if len(acc) > 3 else None
            bk = None if bx is None else (bx[0], bx[1])
            for gk, g in cache_groups[acc[0]].items():
                if not (g[0] < hi and lo < g[1]):
                    continue
                if bk is None or gk != bk:
                    for rec in g[2]:
                        if rec[0] < hi and lo < rec[1]:
                            if rec[2] is not None:
                                add(rec[2])
                            rec[3].append(idx)
                else:
                    bb = bx[2]
                    for rec in g[2]:
                        if (rec[0] < hi and lo < rec[1]
                                and all(s1 < e2 and s2 < e1 for (s1, e1), (s2, e2) in zip(rec[4][2], bb))):
                            if rec[2] is not None:
                                add(rec[2])
                            rec[3].append(idx)
        for acc in writes:
            if acc[0] == "S":
                rec = s_recs.get(acc[1])
                if rec is not None:
                    if rec[0] is not None:
                        add(rec[0])
                    if len(rec[1]) > 2 * rec[2] + 8:
                        thin(rec[1])
                        rec[2] = len(rec[1])
                    deps.update(rec[1])
                s_recs[acc[1]] = [idx, [], 0]
                continue
            lo, hi = acc[1], acc[2]
            bx = acc[3] if len(acc) > 3 else None
            bk = None if bx is None else (bx[0], bx[1])
            groups = cache_groups[acc[0]]
            emptied = []
            for gk, g in groups.items():
                if not (g[0] < hi and lo < g[1]):
                    continue
                same = bk is not None and gk == bk
                recs = g[2]
                changed = None  # position -> the records replacing the one there
                for k, rec in enumerate(recs):
                    if rec[0] < hi and lo < rec[1]:
                        if same and not all(s1 < e2 and s2 < e1 for (s1, e1), (s2, e2) in zip(rec[4][2], bx[2])):
                            continue
                        if rec[2] is not None:
                            add(rec[2])
                        if rec[3]:
                            if len(rec[3]) > 2 * rec[5] + 8:
                                thin(rec[3])
                                rec[5] = len(rec[3])
                            deps.update(rec[3])
                        if bx is not None:
                            # a box does not write every byte of its span: drop only
                            # the records of its buffer it covers
                            if same and _box_covers(bx, rec[4]):
                                if changed is None:
                                    changed = {}
                                changed[k] = ()
                            continue
                        pieces = []
                        rb = rec[4]
                        if rec[0] < lo:
                            pieces.append([rec[0], lo, rec[2], list(rec[3]), rb, rec[5]])
                        if hi < rec[1]:
                            pieces.append([hi, rec[1], rec[2], list(rec[3]), rb, rec[5]])
                        if changed is None:
                            changed = {}
                        changed[k] = pieces
                if changed is not None:
                    for k in sorted(changed, reverse=True):
                        recs[k:k + 1] = changed[k]
                    if recs:
                        g[0] = min(r[0] for r in recs)
                        g[1] = max(r[1] for r in recs)
                    else:
                        emptied.append(gk)
            for gk in emptied:
                del groups[gk]
            g = groups.get(bk)
            if g is None:
                groups[bk] = [lo, hi, [[lo, hi, idx, [], bx, 0]]]
            else:
                g[2].append([lo, hi, idx, [], bx, 0])
                if lo < g[0]:
                    g[0] = lo
                if hi > g[1]:
                    g[1] = hi
        deps.discard(idx)
        return self._reduce(idx, unit, deps)

    def _reduce(self, idx: int, unit: str, deps: set[int]) -> list[int]:
        """The predecessors of `idx` that no other one makes redundant (see the class
        docstring), ascending; records the ancestors of `idx`."""
        if not self.reduce:
            return sorted(deps)
        units, anc = self.units, self.ancestors
        ps = sorted(deps, reverse=True)
        cover_all = 0
        cover: dict[str, int] = {}
        keep = []
        mine = 0
        for p in ps:
            up = units[p]
            c = cover.get(up, 0)
            if not ((c >> p) & 1 or (up == unit and (cover_all >> p) & 1)):
                # (a dropped one's ancestors are those of a kept one already)
                a = anc[p]
                keep.append(p)
                mine |= a | (1 << p)
                cover[up] = c | a
                cover_all |= a
        anc.append(mine)
        keep.reverse()
        return keep


def dependencies(accesses: Iterable[tuple[Sequence[Access], Sequence[Access]]],
                 units: Sequence[str], reduce: bool = True) -> list[list[int]]:
    """Predecessors of each instruction (reduced unless `reduce=False`: see
    `DependencyTracker`), given (reads, writes) in program order and each
    instruction's unit."""
    tr = DependencyTracker(reduce)
    return [tr.add(r, w, u) for (r, w), u in zip(accesses, units)]


# --------------------------------------------------------------------------------------
# SIGNAL/WAIT for an order of the instructions
# --------------------------------------------------------------------------------------


def sync_tokens(units: Sequence[str], preds: Sequence[Sequence[int]],
                order: Sequence[int]) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    """(signals after, waits before) each instruction index, for running `order` (a
    topological order of `preds`) on in-order unit queues: SIGNAL after a producer
    and WAIT before a consumer on another unit, on a fresh token `t<k>`, unless the
    consumer's unit already knows (transitively, by vector clocks over the unit
    queues) that the producer has finished."""
    n = len(units)
    qpos = [0] * n
    count: dict[str, int] = {}
    for i in order:
        u = units[i]
        qpos[i] = count.get(u, 0)
        count[u] = qpos[i] + 1
    know: dict[str, dict[str, int]] = {}
    ivc: list[dict[str, int] | None] = [None] * n
    # the knowledge at an instruction is read only where another unit waits for it
    signalled = {p for i in order for p in preds[i] if units[p] != units[i]}
    signals: dict[int, list[str]] = {}
    waits: dict[int, list[str]] = {}
    ntok = 0
    for i in order:
        u = units[i]
        k = know.setdefault(u, {})
        need: dict[str, int] = {}
        for p in preds[i]:
            up = units[p]
            if up != u and (up not in need or qpos[p] > qpos[need[up]]):
                need[up] = p
        for up in sorted(need):
            p = need[up]
            if k.get(up, -1) >= qpos[p]:
                continue
            tok = f"t{ntok}"
            ntok += 1
            signals.setdefault(p, []).append(tok)
            waits.setdefault(i, []).append(tok)
            for kk, vv in ivc[p].items():  # type: ignore[union-attr]
                if k.get(kk, -1) < vv:
                    k[kk] = vv
            k[up] = qpos[p]
        if i in signalled:
            ivc[i] = dict(k)
        k[u] = qpos[i]
    return signals, waits


# --------------------------------------------------------------------------------------
# Accesses on chip IR
# --------------------------------------------------------------------------------------


def _fmt_one(acc: Access) -> str:
    if acc[0] == "S":
        if isinstance(acc[1], str):
            return f"S:@{acc[1]}"
        return f"S:{acc[1][0]}:{acc[1][1]}"
    s = f"{acc[0]}:{acc[1]}:{acc[2]}"
    if len(acc) > 3 and acc[3] is not None:
        base, shape, bounds = acc[3]
        s += f":{base}:{'x'.join(map(str, shape))}:{','.join(f'{a}-{b}' for a, b in bounds)}"
    return s


def format_accesses(reads: Sequence[Access], writes: Sequence[Access]) -> str:
    """The `nnx.access` text: `R R ... | W W ...`, one access each: `S:@BUFFER` (a
    storage buffer, before chip-allocate), `S:LO:HI` (the storage allocation at those
    addresses), `SPACE:LO:HI` (cache bytes) or `SPACE:LO:HI:BASE:DIMS:S0-E0,S1-E1,...`
    (cache bytes narrowed to an element box of the buffer at BASE of shape DIMS)."""
    return " ".join(map(_fmt_one, reads)) + " | " + " ".join(map(_fmt_one, writes))


def _parse_one(s: str) -> Access:
    f = s.split(":")
    if f[0] == "S":
        if f[1].startswith("@"):
            return ("S", f[1][1:])
        return ("S", (int(f[1]), int(f[2])))
    if len(f) == 3:
        return (f[0], int(f[1]), int(f[2]))
    shape = tuple(int(d) for d in f[4].split("x")) if f[4] else ()
    bounds = tuple(tuple(int(x) for x in b.split("-")) for b in f[5].split(",")) if f[5] else ()
    return (f[0], int(f[1]), int(f[2]), (int(f[3]), shape, bounds))


def parse_accesses(text: str) -> tuple[list[Access], list[Access]]:
    """Inverse of `format_accesses`."""
    r, _, w = text.partition("|")
    return [_parse_one(x) for x in r.split()], [_parse_one(x) for x in w.split()]


def allocate_accesses(text: str, placed: dict[str, tuple[int, int]]) -> str:
    """`nnx.access` text with every storage buffer `S:@B` replaced by the addresses
    `S:LO:HI` chip-allocate gave it (`placed[B]`)."""
    reads, writes = parse_accesses(text)

    def one(a: Access) -> Access:
        return ("S", placed[a[1]]) if a[0] == "S" and isinstance(a[1], str) else a

    return format_accesses([one(a) for a in reads], [one(a) for a in writes])


def tile_accesses(ins: Instr) -> tuple[list[Access], list[Access]]:
    """Accesses of an instruction from its tiles alone (hand-written chip IR):
    sources and masks are read, destinations written (and read under `acc`); a
    storage tile is the granule of its own byte span."""

    def acc(t) -> Access:
        if t.space == "S":
            return ("S", (t.offset, t.end))
        if t.space.startswith("@"):
            return ("S", t.space[1:])  # a chip.buffer: the granule is the buffer
        return (t.space, t.offset, t.end)

    reads = [acc(t) for t in ins.srcs if t is not None]
    reads += [acc(ins.opts[k]) for k in ("nmask", "wmask") if k in ins.opts]
    writes = [acc(t) for t in ins.dsts if t is not None]
    if ins.opts.get("acc"):
        reads += writes
    return reads, writes


def op_accesses(op) -> tuple[list[Access], list[Access]]:
    """(reads, writes) of a chip instruction op: its `nnx.access` attribute, else its
    tiles (`tile_accesses`)."""
    a = op.attributes.get(ACCESS_ATTR)
    if a is not None:
        return parse_accesses(a.data)
    return tile_accesses(op.to_instr())


@dataclass
class Dependencies:
    """The instruction DAG of a program, indexed by block position: `ops[i]` (the chip
    op), `units[i]`, `instrs[i]` (its ISA view) and `preds[i]` (block positions of
    the instructions that must finish first)."""

    ops: list
    units: list[str]
    preds: list[list[int]]

    @cached_property
    def instrs(self) -> list[Instr]:
        """The ISA view of each op (built on first use)."""
        return [op.to_instr() for op in self.ops]

    def reordered(self, order: Sequence[int]) -> "Dependencies":
        """The same DAG indexed by the positions of a new block order (`order[k]`: the
        old position of the instruction now at k)."""
        pos = [0] * len(order)
        for k, i in enumerate(order):
            pos[i] = k
        d = Dependencies([self.ops[i] for i in order], [self.units[i] for i in order],
                         [sorted(pos[p] for p in self.preds[i]) for i in order])
        if "instrs" in self.__dict__:
            d.__dict__["instrs"] = [self.instrs[i] for i in order]
        return d

    def order_violation(self) -> tuple[int, int] | None:
        """(i, p): block position i comes before its dependency p; None if the block
        order is a topological order of the dependencies."""
        for i, ps in enumerate(self.preds):
            for p in ps:
                if p >= i:
                    return i, p
        return None


def instruction_dependencies(program) -> Dependencies:
    """The dependencies of the instructions of a `chip.program` (SIGNAL/WAIT
    excluded), indexed by block position and computed in the program's sequential
    order (`nnx.seq` when every instruction has it, else the block order): what a
    scheduling pass needs (any topological order of `preds` computes the same
    results) and what chip-sync turns into SIGNAL/WAIT."""
    from nnx.dialects.chip import SignalOp, WaitOp

    ops = [op for op in program.instructions() if not isinstance(op, (SignalOp, WaitOp))]
    n = len(ops)
    seqs = [op.attributes.get(SEQ_ATTR) for op in ops]
    ref: list[int] = list(range(n))
    if n and all(s is not None for s in seqs):
        ref.sort(key=lambda i: seqs[i].value.data)  # type: ignore[union-attr]
    units = [op.unit.data for op in ops]
    tr = DependencyTracker()
    preds: list[list[int]] = [[] for _ in range(n)]
    for i in ref:
        a = ops[i].attributes.get(ACCESS_ATTR)
        r, w = parse_accesses(a.data) if a is not None else tile_accesses(ops[i].to_instr())
        preds[i] = sorted(ref[p] for p in tr.add(r, w, units[i]))
    return Dependencies(ops, units, preds)


def emitted_dependencies(program, entries: Sequence[tuple[Instr, Sequence[Access], Sequence[Access]]]) -> Dependencies:
    """The dependencies of a program chip-lower has just built, straight from the
    accesses it emitted (`entries`: (instruction, reads, writes) in emitted order, one
    per instruction op of `program`, still in that order): the DAG that
    `instruction_dependencies` would parse back from `nnx.access`, without the
    parsing (the composite lower-to-chip computes the same from its plain data,
    nnx/lowering/program.py)."""
    ops = program.instructions()
    if len(ops) != len(entries):
        raise ValueError("internal: the program does not hold the emitted instructions")
    units = [op.unit.data for op in ops]
    d = Dependencies(ops, units, dependencies([(r, w) for _, r, w in entries], units))
    d.__dict__["instrs"] = [ins for ins, _, _ in entries]  # same sizes and shapes: same costs
    return d
