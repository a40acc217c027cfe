"""A lowered program as plain data, from chip-lower's emission to the final program.

`lower-to-chip` (passes/lower_to_chip.py) runs chip-lower, chip-allocate, (with
scheduling) chip-schedule and chip-sync in one go. Each of those passes works on the
chip IR of a `chip.program`, but in the composite the program need not be IR until
the end: building an xDSL op for every instruction, rewriting its tiles and
converting it back to an `Instr` was most of a small program's lowering time (a mesh
core's: docs/mesh.md, "Compilation time"). A `LoweredProgram` holds what the passes
read and write -- the storage buffers, the storage symbols, the instructions with
their accesses -- and the functions here do the passes' work on it:

* `lowered_program(cx, inputs, outputs)`: what chip-lower emitted (its
  `build_program` builds the IR of the same data);
* `allocate(lp, ...)`: chip-allocate's addresses (the same placement functions,
  passes/chip_allocate.py), its tiles and accesses rewritten;
* `synchronised(pass_name, deps)`: the instructions with chip-sync's SIGNAL/WAIT;
* `program_op(lp)`: the `chip.program` op the separate passes would have built;
  `isa_instr(ins)`: the `Instr` that op's instruction gives back (`to_instr`), so a
  program assembled from the data (`nnx.tools.nnx_translate.assemble`) is the one
  nnx-translate writes from the IR, byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nnx.sim.isa import Instr, Tile


@dataclass
class LoweredProgram:
    """The state of a program between the chip passes, as plain data: `buffers`
    (name, bytes, kind) until allocated (then empty), the storage symbols
    (`inputs`/`outputs`: (name, tile); `consts`: (name, tile, value attribute)),
    `entries` (instruction, reads, writes) in emitted order, `storage_bytes` and
    `first_use` (input symbol -> position of its first use, chip-allocate's
    `nnx.first_use`) once allocated, and `instrs`, the final instructions (with
    SIGNAL/WAIT) once synchronised."""

    target: str
    buffers: list[tuple[str, int, str]]
    inputs: list[tuple[str, Tile]]
    consts: list[tuple[str, Tile, Any]]
    outputs: list[tuple[str, Tile]]
    entries: list[tuple[Instr, list, list]]
    storage_bytes: int = 0
    first_use: dict[str, int] = field(default_factory=dict)
    instrs: list[Instr] | None = None
    #: in emitted order (no list scheduling): input symbol -> position of the first
    #: op reading it, output symbol -> position after the op producing it
    #: (nnx/lowering/lowering.py, `_op_positions`)
    op_positions: dict[str, tuple[int, int]] = field(default_factory=dict)


def lowered_program(cx, inputs: list, outputs: list) -> LoweredProgram:
    """What chip-lower emitted into the lowering context `cx` (a `chip.buffer` per
    storage tensor in allocation order, graph outputs' buffers of kind "output", the
    storage symbols pointing into them), for the input/output (name, Tensor) lists."""

    def sym_tile(t) -> Tile:
        if t.strides is not None:  # a received band written in place (in_place_concats)
            return t.tile(tuple((0, d, 1) for d in t.shape))
        return Tile(t.tile_space, t.offset, t.shape, t.dtype)

    for _, t in outputs:
        buf = cx.store.buffer(t.buffer)
        if buf.kind == "intermediate":
            buf.kind = "output"
    return LoweredProgram(cx.target.name, [(b.name, b.nbytes, b.kind) for b in cx.store.buffers],
                          [(n, sym_tile(t)) for n, t in inputs],
                          [(n, sym_tile(t), v) for n, t, v in cx.store.consts],
                          [(n, sym_tile(t)) for n, t in outputs], cx.stream.entries)


def _buffer_of(t: Tile | None) -> str | None:
    return t.space[1:] if t is not None and t.space.startswith("@") else None


def allocate(lp: LoweredProgram, pass_name: str, reuse: bool = False, reuse_limit: int = 0,
             reuse_inputs: frozenset[str] = frozenset()) -> None:
    """chip-allocate on `lp` (`nnx.passes.chip_allocate.allocate_program` on its IR):
    addresses for the buffers, every symbolic tile and storage access rewritten to
    them, `storage_bytes` and `first_use` set, `buffers` emptied."""
    from nnx.diagnostics import PassError
    from nnx.passes.chip_allocate import buffer_addresses, live_ranges_of, reuse_plan, reused_addresses

    if not lp.buffers:
        return
    if reuse:
        def touched(ins, reads, writes):
            names = [t.space[1:] for t in ins.tiles() if t.space[0] == "@"]
            names += [a[1] for a in reads if a[0] == "S" and isinstance(a[1], str)]
            return names + [a[1] for a in writes if a[0] == "S" and isinstance(a[1], str)]

        live = live_ranges_of(touched(*e) for e in lp.entries)
        reusable, lp.first_use = reuse_plan(lp.buffers, live, [(n, _buffer_of(t)) for n, t in lp.inputs],
                                            reuse_inputs)
        addr, lp.storage_bytes = reused_addresses(lp.buffers, live, reusable, reuse_limit)
    else:
        addr, lp.storage_bytes = buffer_addresses(lp.buffers)
    placed = {name: (addr[name], addr[name] + nbytes) for name, nbytes, _ in lp.buffers}
    tiles: dict[Tile, Tile] = {}

    def tile(t: Tile | None, at) -> Tile | None:
        if t is None or t.space[0] != "@":
            return t
        got = tiles.get(t)
        if got is None:
            base = addr.get(t.space[1:])
            if base is None:
                raise PassError(f"{pass_name}: tile {t.text()} points into {t.space}, which is not a chip.buffer", at)
            got = tiles[t] = Tile("S", base + t.offset, t.shape, t.dtype, t.strides)
        return got

    def access(a):
        if a[0] == "S" and isinstance(a[1], str):
            got = placed.get(a[1])
            if got is None:
                raise PassError(f"{pass_name}: nnx.access names @{a[1]}, which is not a chip.buffer")
            return ("S", got)
        return a

    lp.inputs = [(n, tile(t, None)) for n, t in lp.inputs]
    lp.consts = [(n, tile(t, None), v) for n, t, v in lp.consts]
    lp.outputs = [(n, tile(t, None)) for n, t in lp.outputs]

    def symbolic(tiles) -> bool:
        return any(t is not None and t.space[0] == "@" for t in tiles)

    entries = []
    for ins, reads, writes in lp.entries:
        if symbolic(ins.dsts) or symbolic(ins.srcs) or symbolic(v for v in ins.opts.values() if isinstance(v, Tile)):
            ins = Instr(ins.unit, ins.mnemonic, [tile(t, None) for t in ins.dsts], [tile(t, None) for t in ins.srcs],
                        ins.attrs, {k: tile(v, None) if isinstance(v, Tile) else v for k, v in ins.opts.items()},
                        ins.token)
        if any(a[0] == "S" for a in reads):
            reads = [access(a) for a in reads]
        if any(a[0] == "S" for a in writes):
            writes = [access(a) for a in writes]
        entries.append((ins, reads, writes))
    lp.entries = entries
    lp.buffers = []


def synchronised(pass_name: str, deps) -> list[Instr]:
    """The instructions of `deps` (`nnx.lowering.deps.Dependencies` whose `ops` are
    `Instr`s, in program order) with chip-sync's SIGNAL/WAIT
    (`nnx.passes.chip_sync.synchronise_program` on the IR)."""
    from nnx.lowering.deps import sync_tokens
    from nnx.passes.chip_sync import check_order

    check_order(pass_name, deps)
    signals, waits = sync_tokens(deps.units, deps.preds, range(len(deps.ops)))
    out: list[Instr] = []
    for i, ins in enumerate(deps.ops):
        if i in waits:
            out.extend(Instr(deps.units[i], "WAIT", token=tok) for tok in waits[i])
        out.append(ins)
        if i in signals:
            out.extend(Instr(deps.units[i], "SIGNAL", token=tok) for tok in signals[i])
    return out


def program_op(lp: LoweredProgram, accesses: bool = False):
    """The `chip.program` op of `lp`: its `chip.buffer`s (while not allocated), its
    storage symbols (inputs with `nnx.first_use`), then the instructions (`instrs`
    when synchronised, else those of `entries`, with `accesses`: each with its
    `nnx.access` and `nnx.seq`, as chip-lower emits them)."""
    from xdsl.dialects.builtin import IntAttr, IntegerAttr, StringAttr, i64

    from nnx.dialects.chip import BufferOp, ConstOp, InputOp, OutputOp, ProgramOp, TileAttr, instr_op
    from nnx.lowering.deps import ACCESS_ATTR, format_accesses, SEQ_ATTR
    from nnx.passes.chip_allocate import FIRST_USE_ATTR

    ops: list = [BufferOp.create(properties={"sym_name": StringAttr(name), "bytes": IntegerAttr(nbytes, i64),
                                             "kind": StringAttr(kind)})
                 for name, nbytes, kind in lp.buffers]
    for name, t in lp.inputs:
        op = InputOp.create(properties={"sym_name": StringAttr(name), "tile": TileAttr.of(t)})
        if name in lp.first_use:
            op.attributes[FIRST_USE_ATTR] = IntAttr(lp.first_use[name])
        ops.append(op)
    for name, t, value in lp.consts:
        ops.append(ConstOp.create(properties={"sym_name": StringAttr(name), "tile": TileAttr.of(t), "value": value}))
    for name, t in lp.outputs:
        ops.append(OutputOp.create(properties={"sym_name": StringAttr(name), "tile": TileAttr.of(t)}))
    if lp.instrs is not None:
        ops.extend(instr_op(ins) for ins in lp.instrs)
    else:
        for seq, (ins, reads, writes) in enumerate(lp.entries):
            op = instr_op(ins)
            if accesses:
                op.attributes[ACCESS_ATTR] = StringAttr(format_accesses(reads, writes))
                op.attributes[SEQ_ATTR] = IntegerAttr(seq, i64)
            ops.append(op)
    return ProgramOp(lp.storage_bytes, ops, target=lp.target)


def assembled(lp: LoweredProgram, target, asm_path: str):
    """(nnx.sim.asm.Program, data bytes or None) of the synchronised `lp`: what
    nnx-translate makes of `program_op(lp)` (`nnx.tools.nnx_translate.build_program`),
    without the IR; checked against `target` (a UserError when it does not fit)."""
    import numpy as np

    from nnx.resources import elements_value
    from nnx.tools.nnx_translate import assemble

    return assemble(lp.target or target.name, lp.storage_bytes, [(n, _isa_tile(t)) for n, t in lp.inputs],
                    [(n, _isa_tile(t)) for n, t in lp.outputs],
                    [(n, _isa_tile(t), np.asarray(elements_value(v))) for n, t, v in lp.consts],
                    [isa_instr(ins) for ins in lp.instrs or ()], asm_path, target)


# --------------------------------------------------------------------------------------
# The ISA view of the IR, without the IR
# --------------------------------------------------------------------------------------

#: an attribute value -> the value its attribute gives back (memo of `_attr_value`)
_VALUES: dict = {}

#: the order `ChipInstrOp.to_instr` gives the options in
_OPTS = ("acc", "nmask", "wmask")


def _key(v):
    """A memo key telling apart values that compare equal but print differently
    (1, 1.0, True); None for values not remembered (arrays)."""
    if isinstance(v, (list, tuple)):
        if all(type(x) is int for x in v):  # (the common case, at once)
            return (type(v), int, tuple(v))
        keys = tuple(_key(x) for x in v)
        return None if None in keys else (type(v), keys)
    if isinstance(v, (int, float, str, bool)):
        return (type(v), v)
    return None


def _attr_value(v):
    """The Python value of `v` as the attribute `instr_op` makes of it gives it back
    (floats rounded to f32, integer lists as lists, arrays as nested lists)."""
    from nnx.dialects.chip import _py
    from nnx.dialects.graph import python_to_attr

    k = _key(v)
    if k is None:
        return _py(python_to_attr(v))
    got = _VALUES.get(k, _VALUES)
    if got is _VALUES:
        got = _VALUES[k] = _py(python_to_attr(v))
    return got


def _isa_tile(t: Tile | None) -> Tile | None:
    """`TileAttr.of(t).tile()`: no empty strides (integers print alike whatever
    their type)."""
    return t if t is None or t.strides is None or t.strides else Tile(t.space, t.offset, t.shape, t.dtype)


def isa_instr(ins: Instr) -> Instr:
    """`instr_op(ins).to_instr()` without building the op: the same tiles, the
    parameters as their attributes give them back, the options in the op's order
    (`ins` itself when that changes nothing)."""
    attrs, opts, dsts, srcs = ins.attrs, ins.opts, ins.dsts, ins.srcs
    if any(t is not None and t.strides == () for t in dsts) or any(t is not None and t.strides == () for t in srcs):
        dsts, srcs = [_isa_tile(t) for t in dsts], [_isa_tile(t) for t in srcs]
    elif not attrs and not opts:
        return ins
    if opts:
        opts = {k: (True if k == "acc" else _isa_tile(opts[k])) for k in _OPTS if k in opts}
    return Instr(ins.unit, ins.mnemonic, list(dsts), list(srcs), {k: _attr_value(v) for k, v in attrs.items()},
                 opts, ins.token)
