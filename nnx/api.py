"""The Python API: what the command-line tools do, as functions for scripts and notebooks.

    from nnx import api

    module = api.import_onnx("examples/tiny_cnn.onnx", batch=1)     # nnx-import
    api.run_pipeline(module, "builtin.module(graph-fold-constants,canonicalize,dce)")  # nnx-opt
    ref = api.interpret(module, {"image": x})                      # nnx-run --interpret
    result = api.train(step_module, "train.npz", steps=300, eval_data="test.npz")  # nnx-train
    result.losses, result.eval_loss, result.params
    prog = api.compile("examples/tiny_cnn.onnx", batch=1)          # nnx-compile
    res = api.simulate(prog, {"image": x})                         # nnx-run PROG.s
    res.outputs["probs"], res.cycles, res.report["units"]

Every function is the one the tools call (nnx/pipeline.py, nnx/plugins.py, the
importer, the interpreter, nnx-translate's program builder, the simulator and its
report), so a script and a command line give the same result. Mistakes raise the
project's exception types (`nnx.ir_io.UserError` and its subclasses such as
`nnx.pipeline.PipelineError` and `PassFailure`, `nnx.target.TargetError`,
`nnx.sim.asm.AsmError`, `nnx.sim.memory.SimError`, `nnx.interp.interpreter.InterpError`),
never `SystemExit`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nnx.pipeline import (
    PassNode,
    Pipeline,
    RunOptions,
    instantiate_pipeline,
    parse_pipeline_text,
    pass_options,
)
from nnx.plugins import all_passes, load_pass_plugin
from nnx.target import Target, load_target

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from nnx.sim import asm
    from nnx.sim.simulator import RunResult

__all__ = [
    "Program",
    "SimulationResult",
    "compile",
    "compile_files",
    "compile_pipeline",
    "default_pipeline",
    "import_onnx",
    "interpret",
    "load_pass_plugin",
    "load_target",
    "parse_module",
    "program_from_chip",
    "run_pipeline",
    "run_report",
    "simulate",
    "train",
]

LOWERING = "lower-to-chip"


def import_onnx(
    path: str | os.PathLike[str],
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    batch: int | None = None,
    constants: Mapping[str, np.ndarray] | None = None,
    training: bool | None = None,
) -> ModuleOp:
    """Import an ONNX file into a module with one `func.func @main` of graph ops
    (what nnx-import writes); see `nnx.importer.import_onnx` (`training`: keep nodes
    over parameters for graph-autodiff, None = detect)."""
    from nnx.importer import import_onnx as _import

    shapes = {k: tuple(int(d) for d in v) for k, v in (input_shapes or {}).items()}
    return _import(os.fspath(path), shapes or None, batch, constants, training=training)


def parse_module(text: str | bytes, filename: str = "<string>") -> ModuleOp:
    """Parse nnx IR text (what nnx-opt reads)."""
    from nnx.ir_io import parse_module_text

    return parse_module_text(text, filename)


def run_pipeline(
    module: ModuleOp,
    pipeline: str | Pipeline,
    *,
    filename: str | None = None,
    verify_each: bool = True,
    print_ir_before_all: bool = False,
    print_ir_after_all: bool = False,
    time_passes: bool = False,
) -> ModuleOp:
    """Run a pass pipeline (`builtin.module(...)`, `a,b` or a `Pipeline`) on `module`
    in place, as nnx-opt does; returns `module`. A pass that rejects the IR raises
    `nnx.pipeline.PassFailure` (its `.diagnostic` has the location). The dumps and
    timings go to stderr."""
    from nnx.ir_io import make_context

    if isinstance(pipeline, str):
        pipeline = Pipeline.parse(pipeline)
    options = RunOptions(
        verify_each=verify_each,
        print_ir_before_all=print_ir_before_all,
        print_ir_after_all=print_ir_after_all,
        time_passes=time_passes,
    )
    pipeline.run(module, make_context(), filename=filename, options=options)
    return module


def interpret(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    function: str | None = None,
) -> dict[str, np.ndarray]:
    """Run `@main` (or `function`) with the numpy reference interpreter; results by
    ONNX output name (nnx-run --interpret)."""
    from nnx.interp.interpreter import run_module

    return run_module(module, inputs, function)


def train(
    step: ModuleOp,
    data: Mapping[str, np.ndarray] | str | os.PathLike[str],
    steps: int,
    eval_data: Mapping[str, np.ndarray] | str | os.PathLike[str] | None = None,
    seed: int = 0,
    function: str | None = None,
):
    """Train with a graph-autodiff step (with an optimizer) as nnx-train does: run
    it `steps` times on batches of `data` (arrays by data-input name, samples first,
    or an .npz file), feeding the updated parameters and optimizer state into the
    next step; returns `nnx.training.TrainResult` (`losses`, `eval_loss` on
    `eval_data`, `params`, `state`, `seconds`). `step` is not changed."""
    from nnx.interp.interpreter import find_function
    from nnx.training import load_data, train as _train, training_signature

    func = find_function(step, function)
    sig = training_signature(func)

    def arrays(d):
        if d is None or isinstance(d, Mapping):
            return d
        return load_data(os.fspath(d), sig)

    return _train(func, arrays(data), steps, arrays(eval_data), seed)


# --------------------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------------------


MESH_LOWERING = "lower-to-mesh"


def lowering_for(target: str | None) -> str:
    """The lowering pass for `target`: `lower-to-mesh` when the target describes a
    network-on-chip (a `[mesh.noc]` table, as targets/mesh.toml; or the built-in
    "mesh") for a mesh of more than one core (docs/mesh.md, "Compilation"), else
    `lower-to-chip` (a bare `[mesh]` only sizes `neuron-group-map`'s core map)."""
    import tomllib

    if target is None:
        return LOWERING
    try:
        tgt = load_target(target)
        if target in ("mesh",):
            has_noc = True
        else:
            with open(target, "rb") as f:
                has_noc = "noc" in tomllib.load(f).get("mesh", {})
    except Exception:  # noqa: BLE001 - a bad target is reported by the pass itself
        return LOWERING
    return MESH_LOWERING if has_noc and tgt.mesh.cores > 1 else LOWERING


def default_pipeline(target: str | None = None, sparsify: str | None = None, lower: bool = True) -> str:
    """nnx-compile's default pipeline text (`lower=False`: without the lowering pass,
    for the mesh program packages of docs/subgraph-split-fuse.md)."""
    passes = ["graph-fold-constants", "canonicalize", "graph-fuse", "dce"]
    if sparsify is not None:
        passes.append(f"sparsify{{{sparsify}}}" if sparsify.strip() else "sparsify")
    lowering = lowering_for(target)
    if lower:
        passes.append(f'{lowering}{{target="{target}"}}' if target else lowering)
    return "builtin.module(" + ",".join(passes) + ")"


def _lowers(node: PassNode) -> bool:
    return node.name in (LOWERING, MESH_LOWERING) or node.name.startswith("chip-")


def compile_pipeline(
    pipeline: str | None = None,
    target: str | None = None,
    sparsify: str | None = None,
    what: str = "pipeline",
) -> Pipeline:
    """The pipeline nnx-compile runs: `pipeline` (default: `default_pipeline()`) with
    `lower-to-chip` appended when no pass lowers to the chip dialect (`lower-to-chip`
    or a `chip-*` pass), `target="..."` given to every top-level pass with a `target`
    option that does not set it, and `sparsify{SPARSIFY}` inserted before the first
    lowering pass."""
    nodes = parse_pipeline_text(pipeline if pipeline is not None else default_pipeline(target), what)
    top = [n for n in nodes if isinstance(n, PassNode)]
    if not any(_lowers(n) for n in top):
        nodes.append(PassNode(lowering_for(target), ""))
        top.append(nodes[-1])
    if target is not None:
        available = all_passes()
        for n in top:
            factory = available.get(n.name)
            if factory is None or "target" not in {o[0] for o in pass_options(factory())}:
                continue
            if not re.search(r"(^|\s)target\s*=", n.options):
                n.options = (n.options + f' target="{target}"').strip()
    if sparsify is not None:
        first = next(i for i, n in enumerate(nodes) if isinstance(n, PassNode) and _lowers(n))
        nodes.insert(first, PassNode("sparsify", sparsify))
    return Pipeline(instantiate_pipeline(nodes, None, what))


@dataclass
class Program:
    """A compiled program: the assembly (`asm.Program`: symbols, instructions, the
    `.data` segment), the bytes of its weights image (None without constants) and
    the target it was compiled for (`simulate` runs it on that one by default)."""

    program: asm.Program
    data: bytes | None
    target: Target | None = None

    @property
    def asm(self) -> str:
        """The assembly text (its `.data` line names the file `save` writes)."""
        from nnx.sim.asm import format_program

        return format_program(self.program)

    def _named_for(self, path: str) -> asm.Program:
        from nnx.tools.nnx_translate import data_file_name

        segs = [dataclasses.replace(s, file=data_file_name(path)) for s in self.program.data]
        return dataclasses.replace(self.program, path=path, data=segs)

    def data_path(self, path: str) -> str:
        """Where `save(path)` puts the weights image."""
        from nnx.tools.nnx_translate import data_file_name

        return os.path.join(os.path.dirname(os.path.abspath(path)), data_file_name(path))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write PATH (the assembly) and, with constants, PATH's `.data` image beside
        it: both files or neither (nnx/atomic_file.py)."""
        from nnx.atomic_file import atomic_outputs
        from nnx.sim.asm import format_program

        path = os.fspath(path)
        text = format_program(self._named_for(path))
        outputs = [path] + ([self.data_path(path)] if self.data is not None else [])
        with atomic_outputs(outputs) as temps:
            with open(temps[0], "w", encoding="utf-8") as f:
                f.write(text)
            if self.data is not None:
                with open(temps[1], "wb") as f:
                    f.write(self.data)


def program_from_chip(module: ModuleOp, target: Target, asm_path: str = "prog.s") -> Program:
    """The `Program` of the one `chip.program` in `module`, checked against `target`
    (what nnx-translate --to-asm writes)."""
    from nnx.tools.nnx_translate import build_program

    prog, data = build_program(module, asm_path, target)
    return Program(prog, data, target)


def compile(  # noqa: A001 - the natural name; `nnx.api.compile` is always qualified
    model: str | os.PathLike[str] | ModuleOp,
    target: str | None = None,
    pipeline: str | None = None,
    *,
    sparsify: str | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    batch: int | None = None,
) -> Program:
    """Compile an ONNX file (or a graph-dialect module, changed in place) for
    `target` (a target file; None: the embedded default), as nnx-compile does."""
    from xdsl.dialects.builtin import ModuleOp

    target_path = os.path.abspath(target) if target else None
    tgt = load_target(target)
    pipe = compile_pipeline(pipeline, target_path, sparsify)
    if isinstance(model, ModuleOp):
        module, filename = model, None
    else:
        filename = os.fspath(model)
        module = import_onnx(filename, input_shapes, batch)
    run_pipeline(module, pipe, filename=filename, verify_each=False)
    return program_from_chip(module, tgt)


def _ends_in_chain(pipeline: Pipeline) -> bool:
    """A mesh pipeline whose last pass before its `lower-to-mesh` is `subgraph-split` or
    `subgraph-fuse` (docs/subgraph-split-fuse.md, "Program packages")."""
    top = [getattr(n, "name", "") for n in pipeline.nodes]
    return len(top) >= 2 and top[-1] == MESH_LOWERING and top[-2] in ("subgraph-split", "subgraph-fuse")


def compile_files(
    module: ModuleOp,
    output: str,
    target: str | None = None,
    pipeline: str | None = None,
    *,
    sparsify: str | None = None,
    filename: str | None = None,
    print_ir_before_all: bool = False,
    print_ir_after_all: bool = False,
    time_passes: bool = False,
    emit_mlir: str | None = None,
    schedule: str | None = None,
) -> None:
    """What nnx-compile writes for an imported `module` (changed in place): the
    program `output` and its data file beside it. `target` is a target file (an
    absolute path; None: the embedded default). With a mesh target (docs/mesh.md)
    and no `pipeline`, a model that does not fit the mesh becomes a program package
    (docs/subgraph-split-fuse.md); a `pipeline` ending in `subgraph-split` or
    `subgraph-fuse{...}` makes each of its subgraphs one program of the package.
    `schedule` is the mesh schedule of such a package's programs (docs/mesh.md,
    "Schedules": `latency`, `throughput`, or the original `stages`; None:
    `nnx.mesh.DEFAULT_SCHEDULE`)."""
    pipe = compile_pipeline(pipeline, target, sparsify, what="--pipeline")
    mesh = lowering_for(target) == MESH_LOWERING
    chained = mesh and pipeline is not None and _ends_in_chain(pipe)
    if chained:  # the pipeline's subgraphs become the package's programs
        pipe = Pipeline(pipe.nodes[:-1])
    package = mesh and (pipeline is None or chained)
    run_pipeline(
        module,
        default_pipeline(target, sparsify, lower=False) if package and not chained else pipe,
        filename=filename,
        verify_each=False,
        print_ir_before_all=print_ir_before_all,
        print_ir_after_all=print_ir_after_all,
        time_passes=time_passes,
    )
    if emit_mlir:
        from nnx.ir_io import module_to_text, write_text_atomically

        write_text_atomically(emit_mlir, module_to_text(module))
    if package:  # a mesh target: one mesh program, or a package of them when it does not fit
        from nnx.split_fuse.programs import write_mesh_programs

        from nnx.mesh import DEFAULT_SCHEDULE

        write_mesh_programs(module, target, output, schedule=schedule or DEFAULT_SCHEDULE)
        return
    from nnx.passes.lower_to_mesh import ASM_ATTR, DATA_ATTR, write_mesh_files

    if ASM_ATTR in module.attributes:  # lower-to-mesh: a mesh program (docs/mesh.md)
        from nnx.resources import elements_value

        data = elements_value(module.attributes[DATA_ATTR]).tobytes()
        write_mesh_files(module.attributes[ASM_ATTR].data, data, output)
        return
    program_from_chip(module, load_target(target), output).save(output)


# --------------------------------------------------------------------------------------
# Simulating
# --------------------------------------------------------------------------------------


@dataclass
class SimulationResult:
    """`outputs` by name, total `cycles`, and `report`: the dict nnx-run --report
    writes (cycles, per-unit busy cycles, bytes moved, MACs, ...). `run` is the
    simulator's raw result (events included)."""

    outputs: dict[str, np.ndarray]
    cycles: int
    report: dict[str, Any]
    run: RunResult


def simulate(
    program: Program | str | os.PathLike[str],
    inputs: Mapping[str, np.ndarray],
    target: str | Target | None = None,
) -> SimulationResult:
    """Run a `Program` (or an assembly file) on the reference simulator (nnx-run).
    `target`: a target file or `Target`; default: the program's own target, else the
    embedded default."""
    from nnx.sim.asm import read_program
    from nnx.sim.report import build_report
    from nnx.sim.simulator import Simulator

    if isinstance(target, Target):
        tgt = target
    elif target is None and isinstance(program, Program) and program.target is not None:
        tgt = program.target
    else:
        tgt = load_target(target)
    if isinstance(program, Program):
        with tempfile.TemporaryDirectory(prefix="nnx-sim-") as d:
            path = os.path.join(d, "prog.s")
            program.save(path)
            sim = Simulator(read_program(path), tgt, record_events=True)
    else:
        sim = Simulator(read_program(os.fspath(program)), tgt, record_events=True)
    result = sim.run(dict(inputs))
    return SimulationResult(result.outputs, result.cycles, build_report(result, tgt), result)


def run_report(path: str | os.PathLike[str], inputs: Mapping[str, np.ndarray], target: str | Target | None = None) -> dict[str, Any]:
    """Run the program file nnx-compile wrote at `path` (a program package, a mesh
    program or a one-core program) on its simulator, as nnx-run does, and return the
    report nnx-run --report writes. `target`: a target file or `Target`; default: the
    embedded default."""
    from nnx.sim.asm_mesh import read_mesh_program
    from nnx.sim.mesh_cli import is_mesh_program
    from nnx.sim.package import is_package, read_package, run_package

    path = os.fspath(path)
    tgt = target if isinstance(target, Target) else load_target(target)
    if is_package(path):
        return run_package(read_package(path), inputs, tgt).report()
    if is_mesh_program(path):
        from nnx.sim.mesh_simulator import MeshSimulator
        from nnx.sim.report import build_mesh_report

        return build_mesh_report(MeshSimulator(read_mesh_program(path), tgt).run(dict(inputs)), tgt)
    return simulate(path, inputs, tgt).report
