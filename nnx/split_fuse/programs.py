"""A graph module -> the mesh programs of its chain (docs/subgraph-split-fuse.md,
"Program packages"): split at target nodes, split further until every subgraph
compiles, fuse with a strategy, and return each program's `MeshCompilation`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from nnx.split_fuse.chain import (Range, crossing_name, inline, is_constant, main_function, ranges_from_cuts,
                                  scheduled_ops, target_nodes, value_names)
from nnx.split_fuse.fit import FitChecker, settle, split_until_fit
from nnx.split_fuse.fuse import Fuser, FusionWindow, fuse_chain


@dataclass
class ChainCompilation:
    """The chosen chain, each range's compilation, the model's output names, the
    number of compile calls made, and (`package_outputs`) the outputs that are
    another host tensor and the constants returned as outputs."""

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


def compile_chain(module: ModuleOp, target: str, strategy: str = "greedy", rule: str = "halve",
                  window: FusionWindow = FusionWindow(), placement: str = "bisect",
                  checker: FitChecker | None = None) -> ChainCompilation:
    """Compile the module's @main as a chain of mesh programs (see the module docstring).
    A single op that does not fit the whole mesh raises a `PassError` naming it."""
    f = main_function(module, "nnx-compile")
    ops = scheduled_ops(f.body.block)
    chain = ranges_from_cuts(len(ops), target_nodes(ops, f.body.block.last_op))
    check = checker or FitChecker(f, target, placement)
    chain = settle(check, lambda: fuse_chain(Fuser(check, window), split_until_fit(check, chain, rule, "subgraph-split"),
                                             strategy))
    outputs, sources, host = package_outputs(f, check.ops)
    return ChainCompilation(chain, [check.compile(r) for r in chain], outputs, check.compile_calls, sources, host)


def write_mesh_programs(module: ModuleOp, target: str, asm_path: str, strategy: str = "greedy") -> int:
    """nnx-compile for a mesh target: the whole model as one mesh program when it
    fits, else a package of programs (nnx/sim/package.py); returns the program count.
    A model with outputs no program computes under their own name (constants, a value
    returned twice) is a package even with one program (its manifest says where
    those outputs come from).
    When @main is already a chain of `graph.subgraph` ops (a `--pipeline` ending in
    `subgraph-split`/`subgraph-fuse`), that chain is kept: each subgraph is one
    program (one that does not compile is split further). Files are written all or
    none."""
    from nnx.dialects.graph import SubgraphOp
    from nnx.mesh.errors import MeshFitError
    from nnx.passes.lower_to_mesh import save_mesh_program
    from nnx.sim.package import write_package

    f = main_function(module, "nnx-compile")
    if any(isinstance(op, SubgraphOp) for op in f.body.block.ops):
        chain = inline(f)
        check = FitChecker(f, target)
        chain = settle(check, lambda: split_until_fit(check, chain, "halve", "nnx-compile"))
        outputs, sources, host = package_outputs(f, check.ops)
        cc = ChainCompilation(chain, [check.compile(r) for r in chain], outputs, check.compile_calls, sources, host)
    else:
        check = FitChecker(f, target)
        whole = (0, len(check.ops))
        if not isinstance(check.compile(whole), MeshFitError):
            outputs, sources, host = package_outputs(f, check.ops)
            cc = ChainCompilation([whole], [check.compile(whole)], outputs, check.compile_calls, sources, host)
        else:
            cc = compile_chain(module, target, strategy, checker=check)
    if len(cc.chain) == 1 and not cc.sources and not cc.host_tensors:
        save_mesh_program(cc.compilations[0], asm_path)
        return 1
    write_package(cc.compilations, cc.outputs, asm_path, cc.sources, cc.host_tensors)
    return len(cc.chain)
