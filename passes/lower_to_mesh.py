"""`lower-to-mesh`: graph ops of `func.func @main` -> a mesh program (docs/mesh.md,
"Compilation").

Every op gets a set of cores sized by its share of the compute and by what its
weights and activations need of a core's memory; conv/gemm/matmul with constant
weights are split by output channels, the word-embedding Gather by table columns,
ops whose activations outweigh their weights (convs, pools, elementwise ops,
softmax, batched matmuls on rank-4 activations) by output rows with the kernel's
halo, elementwise ops, pools, batch norm and depthwise convolutions follow their
producer's split, the rest runs whole (nnx/mesh/partition.py). Weights stay resident
on their cores (each core's `.data` image, loaded at program start). The per-core
stages are placed on the mesh (`placement=bisect`: recursive bisection + swap
refinement over the bytes exchanged; `rowmajor`; `annotations`: the `nnx.cores` of
`neuron-group-map`), each is lowered by the single-core chip passes, and data
between cores travel as SEND/RECV.

The pass annotates every graph op with `nnx.mesh.cores` (the cores of its parts)
and, with `asm=FILE`, writes the mesh assembly FILE and its weights file (FILE with
`.data` for `.s`) atomically; without it the module carries the program as
`nnx.mesh.asm` (text) and `nnx.mesh.data` (bytes), which nnx-compile writes.

`schedule` (docs/mesh.md, "Schedules"): `stages` (above: one core per
stage for the whole program), `latency` (the default, nnx/mesh/latency.py: every op over the
cores its work can use, each core running parts of many layers one after another;
a graph it does not fit is compiled as `stages`), `throughput` (nnx/mesh/pipeline.py:
a layer pipeline for a stream of inputs, groups of consecutive layers on core counts
searched to balance the stage times, nnx/mesh/pipeline_search.py; `stages` when no
pipeline fits) or `proportional` (nnx/mesh/throughput.py: the first throughput
schedule, one core per stage, each op on cores in proportion to its work).

A graph that does not fit fails with one line: cores needed against available, or
bytes needed against a core's memory, and the op responsible (`MeshFitError`).

    nnx-opt m.mlir -p 'lower-to-mesh{target=targets/mesh.toml placement=bisect asm=prog.s}'
    nnx-opt m.mlir -p 'lower-to-mesh{target=targets/mesh.toml schedule=latency asm=prog.s}'
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass

from nnx.mesh import DEFAULT_SCHEDULE

ASM_ATTR = "nnx.mesh.asm"
DATA_ATTR = "nnx.mesh.data"


@dataclass(frozen=True)
class LowerToMeshPass(ModulePass):
    """graph ops of @main -> a mesh program of per-core chip programs joined by
    SEND/RECV (see the module docstring)."""

    name = "lower-to-mesh"

    target: str = "mesh"
    placement: str = "bisect"
    asm: str = ""
    schedule: str = DEFAULT_SCHEDULE

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from nnx.mesh.compile import compile_for_mesh
        from nnx.mesh.core_graph import RETURN
        from nnx.target import load_pass_target

        load_pass_target(self.name, self.target)
        comp = compile_for_mesh(op, self.target or "mesh", self.placement, schedule=self.schedule)
        cores_of: dict[int, list[int]] = {}
        for s in comp.plan.stages:
            for i, _ in s.items:
                if i != RETURN:
                    cores_of.setdefault(i, []).append(comp.cores[s.index])
        for i, gop in enumerate(comp.plan.ops):
            gop.attributes["nnx.mesh.cores"] = DenseArrayBase.from_list(i64, cores_of.get(i, []))
        if self.asm:
            save_mesh_program(comp, self.asm)
        else:
            from nnx.resources import register_array
            from nnx.sim.asm_mesh import format_mesh_program

            op.attributes[ASM_ATTR] = StringAttr(format_mesh_program(comp.program))
            op.attributes[DATA_ATTR] = register_array(np.frombuffer(comp.data, np.uint8).copy(), "mesh_data")


def data_path(asm_path: str) -> str:
    """The weights file beside the mesh assembly `asm_path` (prog.s -> prog.data)."""
    base = asm_path[:-2] if asm_path.endswith(".s") else asm_path
    return base + ".data"


def write_mesh_files(text: str, data: bytes, asm_path: str) -> None:
    """Write the mesh assembly (its `.data` lines renamed to the weights file's name)
    and the weights file: both or neither (nnx/atomic_file.py)."""
    from nnx.atomic_file import atomic_outputs

    dpath = data_path(asm_path)
    text = text.replace(".data prog.data ", f".data {os.path.basename(dpath)} ")
    with atomic_outputs([asm_path, dpath]) as (t_asm, t_data):
        with open(t_asm, "w", encoding="utf-8") as f:
            f.write(text)
        with open(t_data, "wb") as f:
            f.write(data)


def save_mesh_program(comp, asm_path: str) -> None:
    from nnx.sim.asm_mesh import format_mesh_program

    write_mesh_files(format_mesh_program(comp.program), comp.data, asm_path)
