"""Per-subgraph compilation and the linker (docs/topological-order.md, "Linking").

Each subgraph of an order compiles on its own (`chip-lower`) into a `chip.program`
on symbolic storage buffers (`chip.buffer @tK {bytes, kind}`). Its `chip.input`s and
`chip.output`s are named after the graph values they hold (`subgraph_module`), so a
program's input is a symbolic reference to the tensor another subgraph produces.

`link_programs(programs)` combines such programs, given in data-flow order, into one
unallocated program: every buffer is renamed apart (`@s<k>_<name>`), an input that an
earlier program outputs under the same name becomes a reference to the producer's
buffer (its `chip.input` and, unless a later program reads it too, nothing else
remains of it), a producer's output that later programs read and that is not a
program output of the whole becomes an intermediate buffer, inputs of the same name
share one buffer, and the instruction streams are concatenated in program order
(`nnx.seq` renumbered, `nnx.access` renamed). `chip-allocate` then gives the one
storage allocation, `chip-schedule`/`chip-sync` schedule and synchronise the whole
(`finish`, `compile_linked`). Each program leaves its results in storage and assumes nothing
resident in the caches when it starts, so the concatenation is correct; the
dependency analysis of chip-schedule/chip-sync orders the reuse of cache regions
across program boundaries from the instructions' exact accesses.
"""

from __future__ import annotations

from nnx.lowering.lowering import value_names

import re
from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, StringAttr, i64

_SYM = re.compile(r"S:@([A-Za-z0-9_.$-]+)")


class LinkError(Exception):
    """Programs that cannot be linked (what, which program, which symbol); `index`
    is the program to blame, when there is one."""

    def __init__(self, message: str, index: int | None = None):
        super().__init__(message)
        self.index = index


def link_programs(programs: Sequence, outputs: Sequence[str] | None = None):
    """One unallocated `chip.program` from `programs` (unallocated, in data-flow
    order; see the module docstring). `outputs`: the names that stay program
    outputs (default: every output no later program reads)."""
    from nnx.dialects.chip import BufferOp, ChipInstrOp, ConstOp, InputOp, OutputOp, ProgramOp, TileAttr

    produced: dict[str, tuple[str, object]] = {}  # output name -> (linked buffer, tile)
    read_later: set[str] = set()
    for k, prog in enumerate(programs):
        for op in prog.body.block.ops:
            if isinstance(op, InputOp) and any(
                    isinstance(o, OutputOp) and o.sym_name.data == op.sym_name.data
                    for p in programs[:k] for o in p.body.block.ops):
                read_later.add(op.sym_name.data)
    keep_out = set(outputs) if outputs is not None else None

    buffers: list[BufferOp] = []
    symbols: list = []
    instrs: list = []
    inputs: dict[str, str] = {}  # program input name -> its shared buffer
    used_names: dict[str, set[str]] = {"chip.const": set(), "chip.input": set(), "chip.output": set()}
    seq = 0
    target = None
    for k, prog in enumerate(programs):
        if not isinstance(prog, ProgramOp):
            raise LinkError(f"program {k}: expected a chip.program, got {prog.name}", k)
        target = target or prog.target
        ops = list(prog.body.block.ops)
        bufs = {o.sym_name.data: o for o in ops if isinstance(o, BufferOp)}
        if not bufs and any(isinstance(o, ChipInstrOp) for o in ops):
            raise LinkError(f"program {k}: has no chip.buffer (link before chip-allocate)", k)
        rename = {b: f"s{k}_{b}" for b in bufs}
        # inputs produced earlier (or shared with an earlier program's input)
        for o in ops:
            if not isinstance(o, InputOp):
                continue
            name, buf = o.sym_name.data, o.tile.space.data[1:]
            if name in produced:
                pbuf, ptile = produced[name]
                if ptile.tile().nbytes != o.tile.tile().nbytes or o.tile.offset.data != 0:
                    raise LinkError(f"program {k}: input @{name} ({o.tile.tile().text()}) does not match "
                                    f"the output it links to ({ptile.tile().text()})", k)
                rename[buf] = pbuf
            elif name in inputs:
                rename[buf] = inputs[name]
        for name, b in bufs.items():
            if rename[name].startswith(f"s{k}_"):
                kind = b.kind.data
                outs = [o for o in ops if isinstance(o, OutputOp) and o.tile.space.data[1:] == name]
                if outs and all(o.sym_name.data in read_later and
                                (keep_out is None or o.sym_name.data not in keep_out) for o in outs):
                    kind = "intermediate"
                buffers.append(BufferOp.create(properties={
                    "sym_name": StringAttr(rename[name]), "bytes": b.bytes, "kind": StringAttr(kind)}))

        def tile(a, rename=rename):
            if not isinstance(a, TileAttr) or not a.space.data.startswith("@"):
                return a
            return TileAttr(StringAttr("@" + rename[a.space.data[1:]]), a.offset, a.shape, a.element_type,
                            a.strides)

        for o in ops:
            if isinstance(o, BufferOp):
                continue
            if isinstance(o, InputOp):
                name = o.sym_name.data
                if name in produced or name in inputs:
                    continue
                inputs[name] = rename[o.tile.space.data[1:]]
            if isinstance(o, OutputOp):
                name = o.sym_name.data
                produced[name] = (rename[o.tile.space.data[1:]], tile(o.tile))
                if name in read_later and (keep_out is None or name not in keep_out):
                    continue
            if isinstance(o, (InputOp, OutputOp, ConstOp)):
                new = o.clone()
                new.properties["tile"] = tile(o.tile)
                name = new.sym_name.data
                if name in used_names[o.name]:
                    name = f"s{k}_{name}"
                    new.properties["sym_name"] = StringAttr(name)
                used_names[o.name].add(name)
                symbols.append(new)
                continue
            if not isinstance(o, ChipInstrOp):
                raise LinkError(f"program {k}: cannot link {o.name}", k)
            new = o.clone()
            for key in ("dsts", "srcs"):
                new.properties[key] = ArrayAttr([tile(a) for a in new.properties[key].data])
            for key in ("nmask", "wmask"):
                if key in new.properties:
                    new.properties[key] = tile(new.properties[key])
            acc = new.attributes.get("nnx.access")
            if acc is not None:
                new.attributes["nnx.access"] = StringAttr(
                    _SYM.sub(lambda m, rename=rename: "S:@" + rename.get(m.group(1), m.group(1)), acc.data))
            new.attributes["nnx.seq"] = IntegerAttr(seq, i64)
            seq += 1
            instrs.append(new)
    missing = sorted(set(outputs or ()) - {s.sym_name.data for s in symbols if isinstance(s, OutputOp)})
    if missing:
        raise LinkError(f"no program outputs {', '.join('@' + m for m in missing)}")
    # the symbols in the order chip-lower declares them: inputs, constants, outputs
    order = {"chip.input": 0, "chip.const": 1, "chip.output": 2}
    symbols.sort(key=lambda s: order[s.name])
    prog = ProgramOp(0, [*buffers, *symbols, *instrs], target.data if target is not None else None)
    return prog


def link_module(module: ModuleOp, outputs: Sequence[str] | None = None) -> None:
    """Replace the chip.program ops of `module` (in data-flow order) by their link."""
    from nnx.dialects.chip import ProgramOp

    progs = [o for o in module.body.block.ops if isinstance(o, ProgramOp)]
    linked = link_programs(progs, outputs)
    for p in progs:
        p.detach()
    module.body.block.add_op(linked)
    for p in progs:
        p.erase()


# --------------------------------------------------------------------------------------
# per-subgraph compilation of an order
# --------------------------------------------------------------------------------------


def subgraph_module(dag, part: Sequence[int], arg_names: Sequence[str], out_names: dict) -> ModuleOp:
    """The subgraph `part` (node indices in order) as a module whose arguments and
    results carry `nnx.name`s that link: a graph input's own name, a graph output's
    name (`out_names` by value), else `v<node>.<result>`."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import DictionaryAttr
    from xdsl.ir import BlockArgument

    from nnx.topo_order.extract import extract_function

    index = {id(op): i for i, op in enumerate(dag.ops)}
    sub = extract_function(dag, part)
    f = next(o for o in sub.body.block.ops if isinstance(o, func.FuncOp))
    ins, outs = _boundary(dag, part)

    def name(v) -> str:
        if id(v) in out_names:
            return out_names[id(v)]
        if isinstance(v, BlockArgument):
            return arg_names[v.index]
        return f"v{index[id(v.owner)]}.{v.index}"

    f.arg_attrs = ArrayAttr([DictionaryAttr({"nnx.name": StringAttr(name(v))}) for v in ins])
    f.res_attrs = ArrayAttr([DictionaryAttr({"nnx.name": StringAttr(name(v))}) for v in outs])
    return sub


def _boundary(dag, part):
    """(external non-constant operands, results used outside) of `part`, in the
    order extract_function makes them arguments and results."""
    from xdsl.ir import Operation

    inside = {id(dag.ops[i]) for i in part}
    ext, seen, outs = [], set(), []
    for i in part:
        for v in dag.ops[i].operands:
            owner = v.owner
            if isinstance(owner, Operation) and id(owner) in inside or id(v) in seen:
                continue
            seen.add(id(v))
            if not (isinstance(owner, Operation) and not owner.operands and len(owner.results) == 1):
                ext.append(v)
    for i in part:
        for r in dag.ops[i].results:
            if not r.uses or any(id(u.operation) not in inside for u in r.uses):
                outs.append(r)
    return ext, outs


_PENDING: list[ModuleOp] = []
_OPTIONS: tuple[str, bool] = ("", True)


def lower_subgraph(sub: ModuleOp, target_path: str, schedule: bool) -> str:
    """`sub` (consumed) through chip-lower: its unallocated chip.program as text (the
    graph rewrites lower-to-chip runs first with `schedule` included)."""
    from nnx.ir_io import make_context
    from nnx.passes.chip_lower import ChipLowerPass
    from nnx.passes.graph_hoist_addends import GraphHoistAddendsPass
    from nnx.passes.graph_transpose_views import GraphTransposeViewsPass

    ctx = make_context()
    if schedule:
        GraphHoistAddendsPass().apply(ctx, sub)
        GraphTransposeViewsPass().apply(ctx, sub)
    ChipLowerPass(target=target_path, schedule=schedule).apply(ctx, sub)
    return str(_program(sub))


def _lower_pending(i: int) -> str:
    try:
        return lower_subgraph(_PENDING[i], *_OPTIONS)
    except Exception as e:  # noqa: BLE001 - re-raised by the parent
        return f"error: {type(e).__name__}: {e}"


def compile_subgraphs(subs: Sequence[ModuleOp], target_path: str = "", schedule: bool = True,
                      jobs: int = 1, cache: dict[str, str] | None = None) -> list:
    """Each subgraph module through chip-lower on its own, in a process pool of `jobs`
    (fork: the workers read the modules and their weights from their copy of this
    process's memory and send back the program text), each distinct content once
    (`cache`: IR-text hash -> program text, kept by the caller across calls). The
    unallocated chip.programs, in the order of `subs`."""
    import hashlib
    import multiprocessing as mp

    from nnx.ir_io import parse_module_text

    global _PENDING, _OPTIONS
    cache = {} if cache is None else cache
    keys = []
    for m in subs:
        h = hashlib.sha256(str(m).encode())
        h.update(f"|{target_path}|{schedule}".encode())
        keys.append(h.hexdigest())
    todo = {k: m for k, m in zip(keys, subs) if k not in cache}
    items = list(todo.items())
    if jobs > 1 and len(items) > 1 and "fork" in mp.get_all_start_methods():
        _PENDING, _OPTIONS = [m for _, m in items], (target_path, schedule)
        try:
            with mp.get_context("fork").Pool(min(jobs, len(items))) as pool:
                texts = pool.map(_lower_pending, range(len(items)))
        finally:
            _PENDING = []
    else:
        texts = [lower_subgraph(m, target_path, schedule) for _, m in items]
    for (k, _), t in zip(items, texts):
        if t.startswith("error: "):
            raise LinkError(t[len("error: "):])
        cache[k] = t
    return [_program(parse_module_text(cache[k], "<subgraph>")) for k in keys]


def compile_linked(module: ModuleOp, func_name: str, parts: Sequence[Sequence[int]],
                   target_path: str = "", schedule: bool = True, jobs: int = 1,
                   cache: dict[str, str] | None = None) -> ModuleOp:
    """`func_name`'s ops compiled subgraph by subgraph (`parts`: node lists in order,
    in data-flow order; `compile_subgraphs`) and linked into one final program: a
    module holding one allocated, scheduled (with `schedule`) and synchronised
    chip.program."""
    from xdsl.dialects import func

    from nnx.topo_order.dag import build_dag

    f = next(o for o in module.walk() if isinstance(o, func.FuncOp) and o.sym_name.data == func_name)
    dag = build_dag(f.body.block)
    arg_names = value_names(f.arg_attrs, len(f.body.block.args), "arg")
    ret = f.body.block.last_op
    res_names = value_names(f.res_attrs, len(ret.operands), "out")
    out_names = {id(v): n for v, n in zip(ret.operands, res_names)}
    subs = [subgraph_module(dag, part, arg_names, out_names) for part in parts]
    progs = compile_subgraphs(subs, target_path, schedule, jobs, cache)
    return finish(link_programs(progs, res_names), target_path, schedule)


def finish(prog, target_path: str = "", schedule: bool = True) -> ModuleOp:
    """chip-allocate, chip-schedule (with `schedule`) and chip-sync over a linked program."""
    from nnx.ir_io import make_context
    from nnx.passes.chip_allocate import ChipAllocatePass
    from nnx.passes.chip_schedule import ChipSchedulePass
    from nnx.passes.chip_sync import ChipSyncPass

    out = ModuleOp([prog])
    ctx = make_context()
    ChipAllocatePass().apply(ctx, out)
    if schedule:
        ChipSchedulePass(target=target_path).apply(ctx, out)
    ChipSyncPass().apply(ctx, out)
    return out


def _program(module: ModuleOp):
    from nnx.dialects.chip import ProgramOp

    prog = next(o for o in module.body.block.ops if isinstance(o, ProgramOp))
    prog.detach()
    return prog


