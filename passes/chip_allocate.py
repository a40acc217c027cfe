"""`chip-allocate`: static storage addresses for the buffers of a program from `chip-lower`.

chip-lower declares every storage tensor as a `chip.buffer @tK {bytes, kind}` and
points its tiles into it (`#chip.tile<@tK:OFFSET, ...>`, nnx/lowering/storage.py).
This pass gives the buffers their addresses -- the constants first, contiguous from
address 0 in declaration order (nnx-translate writes them as one data image), then
the program inputs, intermediates and outputs in declaration order (chip-lower
declares them in order of first use), each buffer on a 64-byte boundary -- and
rewrites every symbolic tile (storage symbols, instruction operands, masks) to its
absolute `S:` address and every buffer named in an instruction's `nnx.access`
(`S:@tK`) to its address range. `storage_bytes` becomes the end of the last buffer
(at least 64); the `chip.buffer` ops are removed. The result is the storage map of
the README (constants first, then inputs, intermediates, outputs). A program without
`chip.buffer` ops is left as it is; a tile of an undeclared buffer is an error.

Cache addresses are not decided here: chip-lower fixes them, because how an op is
tiled depends on what fits beside the resident buffers (tile sizes, residency and
cache addresses are one decision; docs/architecture.md section 7).

    nnx-opt prog.mlir -p chip-allocate
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError

ALIGN = 64
"""Every buffer starts on a multiple of this many bytes."""

#: attribute of an input symbol whose memory is reused (`allocate_program`): the
#: position of the first instruction touching it
FIRST_USE_ATTR = "nnx.first_use"


def chip_programs(pass_name: str, module: ModuleOp) -> list:
    """The chip.program ops of a module; none is a PassError named `pass_name`."""
    from nnx.dialects.chip import ProgramOp

    progs = [o for o in module.body.block.ops if isinstance(o, ProgramOp)]
    if not progs:
        raise PassError(f"{pass_name}: expected a chip.program (run chip-lower first)")
    return progs


def buffer_addresses(buffers: list[tuple[str, int, str]]) -> tuple[dict[str, int], int]:
    """(address of each buffer, storage bytes) for (name, bytes, kind) in declaration
    order: constants first, then the others, each aligned to `ALIGN`."""
    addr: dict[str, int] = {}
    top = 0
    for consts in (True, False):
        for name, nbytes, kind in buffers:
            if (kind == "const") == consts:
                addr[name] = top
                top = (top + nbytes + ALIGN - 1) // ALIGN * ALIGN
    return addr, max(top, ALIGN)


def live_ranges(prog) -> dict[str, tuple[int, int]]:
    """Buffer name -> (first, last) position of the program's instructions that touch
    it (a tile in it, or an `nnx.access` naming it), in block order."""
    from nnx.dialects.chip import ChipInstrOp, TileAttr
    from nnx.lowering.deps import ACCESS_ATTR, parse_accesses

    def touched(op) -> list[str]:
        names = [a.space.data[1:] for key in ("dsts", "srcs") for a in op.properties[key].data
                 if isinstance(a, TileAttr) and a.space.data.startswith("@")]
        for key in ("nmask", "wmask"):
            a = op.properties.get(key)
            if isinstance(a, TileAttr) and a.space.data.startswith("@"):
                names.append(a.space.data[1:])
        acc = op.attributes.get(ACCESS_ATTR)
        if acc is not None and "S:@" in acc.data:
            reads, writes = parse_accesses(acc.data)
            names += [a[1] for a in reads + writes if a[0] == "S" and isinstance(a[1], str)]
        return names

    return live_ranges_of(touched(o) for o in prog.body.block.ops if isinstance(o, ChipInstrOp))


def live_ranges_of(touched) -> dict[str, tuple[int, int]]:
    """Buffer name -> (first, last) k whose `touched[k]` (the buffer names the
    instruction at k touches) names it."""
    out: dict[str, tuple[int, int]] = {}
    for k, names in enumerate(touched):
        for name in names:
            lo = out.get(name)
            out[name] = (k if lo is None else lo[0], k)
    return out


def reuse_plan(listed: list[tuple[str, int, str]], live: dict[str, tuple[int, int]],
               inputs: list[tuple[str, str | None]], reuse_inputs: frozenset[str]) -> tuple[set[str], dict[str, int]]:
    """(the buffers whose memory is reused, input symbol -> the position of its first
    use) for `allocate_program` with `reuse`: the intermediate buffers and the input
    buffers touched by an instruction whose every input symbol (`inputs`: (symbol,
    its buffer or None)) is in `reuse_inputs` -- several symbols: arguments written
    into one concat's buffer, chip-lower's concat_in_place --, where their data
    must arrive (nnx/mesh/stitch.py)."""
    syms: dict[str, list[str]] = {}
    for sym, buf in inputs:
        if buf is not None:
            syms.setdefault(buf, []).append(sym)
    syms = {buf: names for buf, names in syms.items() if buf in live and all(n in reuse_inputs for n in names)}
    first_use = {n: live[buf][0] for n, buf in inputs if buf in syms}
    return {n for n, _, kind in listed if kind == "intermediate" or (kind == "input" and n in syms)}, first_use


def reused_addresses(buffers: list[tuple[str, int, str]], live: dict[str, tuple[int, int]],
                     reusable: set[str], limit: int = 0) -> tuple[dict[str, int], int]:
    """`reused_at` with the widest slack (memory freed at least that many
    instructions before it is used again: fewer false dependencies between the
    units, which run concurrently) whose storage is within `limit` bytes (0: no
    slack). The slacks tried: the instruction count over 1, 4, 16, 64, then 0."""
    n = max((last for _, last in live.values()), default=0) + 1
    if limit > 0:
        for slack in (n, n // 4, n // 16, n // 64):
            got = reused_at(buffers, live, reusable, slack)
            if got[1] <= limit:
                return got
    return reused_at(buffers, live, reusable, 0)


def reused_at(buffers: list[tuple[str, int, str]], live: dict[str, tuple[int, int]],
              reusable: set[str], slack: int) -> tuple[dict[str, int], int]:
    """(address of each buffer, storage bytes) when the `reusable` buffers share
    memory over time: the others as `buffer_addresses` places them, then each
    reusable buffer (in order of its first use) at the lowest aligned address above
    them where it overlaps no reusable buffer whose live range (`live`: first and
    last instruction touching it, extended by `slack` instructions) meets its own. A
    buffer no instruction touches (a result that stays in a cache) takes no room."""
    import heapq
    from bisect import bisect_left

    import numpy as np

    fixed = [b for b in buffers if b[0] not in reusable]
    addr, top = buffer_addresses(fixed) if fixed else ({}, 0)
    base = top if fixed else 0
    # the buffers come in order of first use, so a placed buffer whose (extended)
    # range ends before one's first use meets no later buffer either: `active` holds
    # the others in address order (with their lowest addresses and aligned ends in
    # `lo`, `top`), `ends` them by the end of their range
    active: list[tuple[int, int, int, int]] = []  # (lo, hi, first, last)
    lo = np.zeros(0, np.int64)
    tops = np.zeros(0, np.int64)
    ends: list[tuple[int, tuple[int, int, int, int]]] = []
    end = base
    for name, nbytes, _ in sorted((b for b in buffers if b[0] in reusable), key=lambda b: live.get(b[0], (-1, -1))):
        if name not in live:  # no instruction touches it (a result kept in a cache): no room needed
            addr[name] = base
            continue
        first, last = live[name]
        last += slack
        while ends and ends[0][0] < first:
            k = bisect_left(active, heapq.heappop(ends)[1])
            del active[k]
            lo, tops = np.delete(lo, k), np.delete(tops, k)
        # the lowest address at or above `base` past every active buffer below it
        # (first fit in address order)
        at = base
        if active:
            below = np.maximum(np.maximum.accumulate(tops), base)
            start = np.concatenate(([base], below[:-1]))
            fits = np.flatnonzero(start + nbytes <= lo)
            at = int(start[fits[0]]) if len(fits) else int(below[-1])
        addr[name] = at
        placed = (at, at + nbytes, first, last)
        k = bisect_left(active, placed)
        active.insert(k, placed)
        lo = np.insert(lo, k, at)
        tops = np.insert(tops, k, (at + nbytes + ALIGN - 1) // ALIGN * ALIGN)
        heapq.heappush(ends, (last, placed))
        end = max(end, (at + nbytes + ALIGN - 1) // ALIGN * ALIGN)
    return addr, max(end, ALIGN)


def allocate_program(pass_name: str, prog, reuse: bool = False, reuse_limit: int = 0,
                     reuse_inputs: frozenset[str] = frozenset()) -> None:
    """Place the buffers of one `chip.program` and rewrite its tiles (see the module
    docstring). With `reuse`, the intermediate buffers (and the input buffers of the
    symbols named in `reuse_inputs`: inputs written while the program runs, at
    their first use, as a mesh core's received messages) share memory over time
    (`reused_addresses`, within `reuse_limit` bytes when it can with slack); such an
    input symbol gets `FIRST_USE_ATTR`, the position of the first instruction that
    touches it (among the instructions, before chip-sync adds SIGNAL/WAIT), which
    its writer must wait for;
    the dependencies must then come from the allocated addresses
    (`nnx.lowering.deps.instruction_dependencies`), which see the reuse."""
    from nnx.dialects.chip import BufferOp, ChipInstrOp, InputOp, TileAttr, _SymbolOp
    from nnx.lowering.deps import ACCESS_ATTR, allocate_accesses

    bufs = [op for op in prog.body.block.ops if isinstance(op, BufferOp)]
    if not bufs:
        return
    listed = [(b.sym_name.data, b.bytes.value.data, b.kind.data) for b in bufs]
    if reuse:
        live = live_ranges(prog)
        inputs = [op for op in prog.body.block.ops if isinstance(op, InputOp)]
        reusable, first_use = reuse_plan(listed, live, [(op.sym_name.data, op.tile.buffer) for op in inputs],
                                         reuse_inputs)
        for op in inputs:
            if op.sym_name.data in first_use:
                op.attributes[FIRST_USE_ATTR] = IntAttr(first_use[op.sym_name.data])
        addr, storage_bytes = reused_addresses(listed, live, reusable, reuse_limit)
    else:
        addr, storage_bytes = buffer_addresses(listed)
    placed = {b.sym_name.data: (addr[b.sym_name.data], addr[b.sym_name.data] + b.bytes.value.data) for b in bufs}
    storage = StringAttr("S")

    def tile(op, a):
        if not isinstance(a, TileAttr) or not a.space.data.startswith("@"):
            return a
        base = addr.get(a.space.data[1:])
        if base is None:
            raise PassError(f"{pass_name}: tile {a.tile().text()} points into {a.space.data}, which is not a chip.buffer", op)
        return TileAttr(storage, IntAttr(base + a.offset.data), a.shape, a.element_type, a.strides)

    for op in prog.body.block.ops:
        if isinstance(op, _SymbolOp):
            op.properties["tile"] = tile(op, op.tile)
        elif isinstance(op, ChipInstrOp):
            for key in ("dsts", "srcs"):
                arr = op.properties[key]
                if any(isinstance(a, TileAttr) and a.space.data.startswith("@") for a in arr.data):
                    op.properties[key] = ArrayAttr([tile(op, a) for a in arr.data])
            for key in ("nmask", "wmask"):
                if key in op.properties:
                    op.properties[key] = tile(op, op.properties[key])
            acc = op.attributes.get(ACCESS_ATTR)
            if acc is not None and "S:@" in acc.data:
                try:
                    op.attributes[ACCESS_ATTR] = StringAttr(allocate_accesses(acc.data, placed))
                except KeyError as e:
                    raise PassError(f"{pass_name}: nnx.access names @{e.args[0]}, which is not a chip.buffer", op) from None
    for b in bufs:
        b.detach()
        b.erase()
    prog.properties["storage_bytes"] = IntegerAttr(storage_bytes, i64)


@dataclass(frozen=True)
class ChipAllocatePass(ModulePass):
    """Static storage addresses for chip-lower's buffers (see the module docstring)."""

    name = "chip-allocate"

    #: intermediate buffers share memory over time (`reused_addresses`)
    reuse: bool = False
    #: with `reuse`: the storage bytes to stay within, reusing memory freed long ago
    #: first (0: reuse as soon as freed)
    reuse_limit: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for p in chip_programs(self.name, op):
            allocate_program(self.name, p, bool(self.reuse), int(self.reuse_limit))
