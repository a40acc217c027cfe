"""A graph module -> the mesh programs of its chain (docs/subgraph-split-fuse.md,
"Program packages"): split at target nodes, split further until every subgraph
compiles (an op that does not fit the mesh alone is split over several programs or
runs on the host, nnx/split_fuse/oversized.py), fuse the programs between host steps
with a strategy, and return each program's `MeshCompilation` and each host step's
module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from nnx.mesh import DEFAULT_SCHEDULE
from nnx.split_fuse.chain import (Range, crossing_name, inline, is_constant, main_function, range_module,
                                  ranges_from_cuts, scheduled_ops, target_nodes, value_names)
from nnx.split_fuse.fit import FitChecker
from nnx.split_fuse.fuse import Fuser, FusionWindow, fuse_chain
from nnx.split_fuse.oversized import FittedChain, fit_chain, presplit
from nnx.target import load_target


@dataclass
class ChainCompilation:
    """The chosen chain, each range's compilation (a host step's: its module, a
    `ModuleOp` run by the host's interpreter), the model's output names, the number
    of compile calls made, and (`package_outputs`) the outputs that are another host
    tensor and the constants returned as outputs."""

    chain: list[Range]
    compilations: list
    outputs: list[str]
    compile_calls: int
    sources: dict[str, str] = field(default_factory=dict)
    host_tensors: dict[str, np.ndarray] = field(default_factory=dict)


def package_outputs(f, ops) -> tuple[list[str], dict[str, str], dict[str, np.ndarray]]:
    """The model's output names; those whose value the programs know under another
    name (a model input, an output returned twice) -> that name; and the constants
    returned as outputs (no program computes them) -> their values."""
    from nnx.graph_queries import const_value

    ret = f.body.block.last_op
    outputs = [d.data["nnx.name"].data for d in f.res_attrs.data] if f.res_attrs else []
    names = value_names(f)
    sources: dict[str, str] = {}
    host: dict[str, np.ndarray] = {}
    for name, v in zip(outputs, ret.operands):
        value = const_value(v) if isinstance(v.owner, Operation) and is_constant(v.owner) else None
        if value is not None:
            host[name] = value
        elif (src := crossing_name(ops, v, names)) != name:
            sources[name] = src
    return outputs, sources, host


def fused_chain(fitted: FittedChain, strategy: str, window: FusionWindow = FusionWindow(),
                objective: str = "programs", group: int = 2) -> FittedChain:
    """The chain with the programs between host steps fused with `strategy` (host
    steps are never fused, with each other or with programs)."""
    fuser = Fuser(fitted.check, window)
    chain: list[Range] = []
    host: list[bool] = []
    for is_host, part in fitted.segments():
        part = part if is_host else fuse_chain(fuser, part, strategy, objective, group)
        chain += part
        host += [is_host] * len(part)
    return FittedChain(fitted.check, chain, host)


def settled_chain(check: FitChecker, chain: list[Range], rule: str, pass_name: str, strategy: str | None = None,
                  window: FusionWindow = FusionWindow(), level: str = "compile", objective: str = "programs",
                  group: int = 2) -> FittedChain:
    """`fit_chain` (then `fused_chain` with `strategy`) until every program range also
    passes `level` (nnx-compile: the full compilation): the checks search at the
    checker's level (docs/subgraph-split-fuse.md, "Fit checks"), and a chosen range
    that fails `level` no longer fits, so the next round splits it (all checks stay
    memoised)."""
    while True:
        fitted = fit_chain(check, chain, rule, pass_name)
        if strategy is not None:
            fitted = fused_chain(fitted, strategy, window, objective, group)
        check = fitted.check
        if all([h or check.verified(r, level) for r, h in zip(fitted.chain, fitted.host)]):
            return fitted
        chain = list(fitted.chain)


def presplit_chain(f, target, chain: list[Range]) -> list[Range]:
    """`presplit` the function's ops larger than the mesh (`target`, loaded) and
    return `chain` (ranges of its scheduled ops) renumbered: the same cuts, less
    those at an op that was split."""
    ops = scheduled_ops(f.body.block)
    starts = [ops[lo] for lo, _ in chain[1:]]
    if not presplit(f, target):
        return list(chain)
    index = {id(op): i for i, op in enumerate(scheduled_ops(f.body.block))}
    return ranges_from_cuts(len(index), [index[id(op)] - 1 for op in starts if id(op) in index])


def chain_compilation(fitted: FittedChain) -> ChainCompilation:
    """Each range's compilation (memoised) or host-step module, and the outputs."""
    check = fitted.check
    outputs, sources, host = package_outputs(check.f, check.ops)
    comps = [range_module(check.f, check.ops, *r) if h else check.compile(r)
             for r, h in zip(fitted.chain, fitted.host)]
    return ChainCompilation(list(fitted.chain), comps, outputs, check.compile_calls, sources, host)


def compile_chain(module: ModuleOp, target: str, strategy: str = "greedy", rule: str = "halve",
                  window: FusionWindow = FusionWindow(), placement: str = "bisect",
                  checker: FitChecker | None = None) -> ChainCompilation:
    """Compile the module's @main as a chain of mesh programs and host steps (see the
    module docstring); ops that do not fit the mesh alone are split in the module.
    A single op that cannot be split and does not fit the whole mesh (or whose
    weights alone exceed it) raises a `PassError` naming it. A given `checker` is
    over the function as `presplit` left it."""
    f = main_function(module, "nnx-compile")
    if checker is None:
        presplit(f, load_target(target))
    ops = scheduled_ops(f.body.block)
    chain = ranges_from_cuts(len(ops), target_nodes(ops, f.body.block.last_op))
    check = checker or FitChecker(f, target, placement)
    return chain_compilation(settled_chain(check, chain, rule, "subgraph-split", strategy, window))


def write_mesh_programs(module: ModuleOp, target: str, asm_path: str, strategy: str = "greedy",
                        schedule: str = DEFAULT_SCHEDULE) -> int:
    """nnx-compile for a mesh target: the whole model as one mesh program when it
    fits, else a package of programs and host steps (nnx/sim/package.py); returns the
    program count. A model with outputs no program computes under their own name
    (constants, a value returned twice) is a package even with one program (its
    manifest says where those outputs come from). Every program is compiled with the
    mesh `schedule` (nnx/mesh/compile.py SCHEDULES).
    When @main is already a chain of `graph.subgraph` ops (a `--pipeline` ending in
    `subgraph-split`/`subgraph-fuse`), that chain is kept: each subgraph is one
    program (one that does not compile is split further). Files are written all or
    none."""
    from nnx.dialects.graph import SubgraphOp
    from nnx.mesh.errors import MeshFitError
    from nnx.passes.lower_to_mesh import save_mesh_program
    from nnx.sim.package import write_package

    f = main_function(module, "nnx-compile")
    tgt = load_target(target)
    if any(isinstance(op, SubgraphOp) for op in f.body.block.ops):
        chain = presplit_chain(f, tgt, inline(f))
        cc = chain_compilation(settled_chain(FitChecker(f, target, schedule=schedule), chain, "halve",
                                             "nnx-compile"))
    else:
        split = presplit(f, tgt)  # ops larger than the mesh: the whole cannot fit
        check = FitChecker(f, target, schedule=schedule)
        whole = (0, len(check.ops))
        if not split and not isinstance(check.compile(whole), MeshFitError):
            outputs, sources, host = package_outputs(f, check.ops)
            cc = ChainCompilation([whole], [check.compile(whole)], outputs, check.compile_calls, sources, host)
        else:
            cc = compile_chain(module, target, strategy, checker=check)
    if len(cc.chain) == 1 and not cc.sources and not cc.host_tensors and not isinstance(cc.compilations[0], ModuleOp):
        save_mesh_program(cc.compilations[0], asm_path)
        return 1
    write_package(cc.compilations, cc.outputs, asm_path, cc.sources, cc.host_tensors)
    return sum(not isinstance(c, ModuleOp) for c in cc.compilations)
