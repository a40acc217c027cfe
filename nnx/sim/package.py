"""Program packages: a model run as a sequence of mesh programs
(docs/subgraph-split-fuse.md, "Program packages").

A package is a manifest at `PROG.s` plus one mesh program file set per program
(`PROG.p<k>.s` and its weights `PROG.p<k>.data`). The manifest is text:

    .package 3                 # number of programs
    .outputs h1 h2 y h1copy=h1 # the model's outputs, in order (NAME=SOURCE: the
                               # output NAME is the host tensor SOURCE)
    .host c prog.host0.npy     # a tensor in host memory from the start (a constant
                               # returned as a model output), optional
    .program prog.p0.s         # the programs and host steps, in the order they run
    .host_step prog.h0.mlir    # (paths relative to the manifest's directory)
    .program prog.p1.s
    .program prog.p2.s

Each program's `.input`/`.output` names are model input/output names or the names of
values parked in host memory between programs (`t<op>_<result>`). Host memory holds
them whole; a program may read (write) them in slices, one per core (docs/mesh.md,
"Inputs and outputs"): the mesh simulator feeds each core its slice and assembles
the outputs, and the host link moves each tensor once. An output that is
another output's value, a model input, or a constant is an alias or a `.host` tensor. Running a package
(`run_package`): for each program in order, its weights are loaded from the host
over the host link, its inputs read from host memory, it runs on the mesh simulator,
and all its outputs are written back to host memory. Total cycles = the sum over
programs of weight-load cycles + input transfer cycles + mesh-run cycles + output
transfer cycles (one host-link transfer per tensor, `Target.host_link`); the parts
run one after another, so each program's parts are intervals of one time line
(`ProgramRun.intervals`), drawn by `nnx/sim/package_plot.py`.

A *host step* (`.host_step FILE.mlir`) is a graph module whose `@main` reads host
tensors (its arguments, by `nnx.name`) and writes host tensors (its results): the
joins and slices of an op split over several programs, and any data-movement op too
big for the mesh (docs/subgraph-split-fuse.md, "Ops larger than the mesh"). The host
runs it with the reference interpreter (the kernels of nnx/interp/kernels.py) on
host memory. Its cost (`HostStepRun.cycles`) is that of moving every tensor it reads
and every tensor it writes once over the host link, as a program's transfers are
counted: the sum of `Target.host_link.transfer_cycles(bytes)` over those tensors.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

MAGIC = ".package"


class PackageError(Exception):
    """A malformed package manifest (one line: file:line: what)."""


PROGRAM = ".program"
HOST_STEP = ".host_step"


@dataclass(frozen=True)
class Step:
    """One line of a manifest that runs: `kind` is `PROGRAM` or `HOST_STEP`, `path`
    absolute, `line` its line number in the manifest (0: not from a file)."""

    kind: str
    path: str
    line: int = 0


@dataclass(frozen=True)
class Package:
    path: str
    outputs: list[str]
    programs: list[str]  # absolute paths
    #: output name -> the host tensor it is (when not the same name)
    sources: dict[str, str] = field(default_factory=dict)
    #: host tensor name -> .npy file (absolute) loaded before the first program
    host_files: dict[str, str] = field(default_factory=dict)
    #: the programs and host steps in run order (empty: the programs alone)
    steps: tuple[Step, ...] = ()

    def run_order(self) -> tuple[Step, ...]:
        """The steps to run, in order."""
        return self.steps or tuple(Step(PROGRAM, p) for p in self.programs)


def is_package_text(text: str) -> bool:
    """True when the first directive of the text is `.package`."""
    for raw in text.splitlines():
        body = raw.split("#", 1)[0].strip()
        if body:
            return body.split()[0] == MAGIC
    return False


def is_package(path: str | None) -> bool:
    if not path:
        return False
    try:
        with open(path, encoding="utf-8") as f:
            return is_package_text(f.read(1 << 16))
    except (OSError, UnicodeDecodeError):
        return False


def format_manifest(outputs: Sequence[str], programs: Sequence[str], sources: Mapping[str, str] | None = None,
                    host_files: Mapping[str, str] | None = None,
                    steps: Sequence[tuple[str, str]] | None = None) -> str:
    """The manifest text; `sources` gives outputs that are another host tensor,
    `host_files` the `.host` tensors (file names relative to the manifest), `steps`
    the (kind, file) of the programs and host steps in run order (default: the
    programs)."""
    sources = sources or {}
    steps = steps if steps is not None else [(PROGRAM, p) for p in programs]
    lines = [f"{MAGIC} {sum(k == PROGRAM for k, _ in steps)}",
             ".outputs " + " ".join(f"{o}={sources[o]}" if o in sources else o for o in outputs)]
    lines += [f".host {n} {f}" for n, f in (host_files or {}).items()]
    lines += [f"{k} {p}" for k, p in steps]
    return "\n".join(lines) + "\n"


def read_package(path: str) -> Package:
    """Parse a manifest; errors are one-line `PackageError`s."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    count, outputs, programs, sources, host, steps = None, [], [], {}, {}, []
    base = os.path.dirname(os.path.abspath(path))
    for n, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == MAGIC and len(words) == 2 and words[1].isdigit():
            count = int(words[1])
        elif words[0] == ".outputs":
            for w in words[1:]:
                name, _, src = w.partition("=")
                outputs.append(name)
                if src:
                    sources[name] = src
        elif words[0] == ".host" and len(words) == 3:
            host[words[1]] = os.path.join(base, words[2])
        elif words[0] == PROGRAM and len(words) == 2:
            programs.append(os.path.join(base, words[1]))
            steps.append(Step(PROGRAM, programs[-1], n))
        elif words[0] == HOST_STEP and len(words) == 2:
            step = os.path.join(base, words[1])
            if not os.path.isfile(step):
                raise PackageError(f"{path}:{n}: host step file '{words[1]}' not found")
            steps.append(Step(HOST_STEP, step, n))
        else:
            raise PackageError(f"{path}:{n}: unknown package directive '{raw.strip()}'")
    if count is None or count != len(programs):
        raise PackageError(f"{path}: '.package N' must give the number of '.program' lines ({len(programs)})")
    return Package(path, outputs, programs, sources, host, tuple(steps))


@dataclass
class ProgramRun:
    """One program of a package run: where it sits on the package's time line, its
    cycles split into parts, the bytes it moved and the host tensors it read/parked.

    The parts run one after another from `start_cycle`: the weight load, the inputs
    read back from host memory, the mesh run, the outputs parked in host memory."""

    program: str
    start_cycle: int
    weight_load_bytes: int
    weight_load_cycles: int
    host_in_bytes: int
    host_in_cycles: int
    mesh_cycles: int
    host_out_bytes: int
    host_out_cycles: int
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    #: the mesh run's network-on-chip traffic (docs/mesh.md, "Simulator")
    noc_bytes: int = 0
    noc_byte_hops: int = 0

    @property
    def host_cycles(self) -> int:
        return self.host_in_cycles + self.host_out_cycles

    @property
    def cycles(self) -> int:
        return self.weight_load_cycles + self.host_cycles + self.mesh_cycles

    @property
    def end_cycle(self) -> int:
        return self.start_cycle + self.cycles

    def intervals(self) -> list[tuple[str, int, int]]:
        """(part, start, end) on the package's time line, in run order; `part` is one
        of `PARTS`. Empty parts are left out."""
        out, t = [], self.start_cycle
        for part, n in zip(PARTS, (self.weight_load_cycles, self.host_in_cycles, self.mesh_cycles,
                                   self.host_out_cycles)):
            if n:
                out.append((part, t, t + n))
            t += n
        return out

    def report(self) -> dict:
        return dict(vars(self), host_cycles=self.host_cycles, cycles=self.cycles, end_cycle=self.end_cycle)


#: the parts of a program's run, in order (`ProgramRun.intervals`)
PARTS = ("weight_load", "host_in", "mesh", "host_out")


@dataclass
class HostStepRun:
    """One host step of a package run: where it sits on the time line, the bytes of
    the host tensors it read and wrote, and its cycles (module docstring: each tensor
    once over the host link)."""

    step: str
    start_cycle: int
    bytes_read: int
    bytes_written: int
    cycles: int
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    @property
    def end_cycle(self) -> int:
        return self.start_cycle + self.cycles

    def report(self) -> dict:
        return dict(vars(self), bytes=self.bytes_read + self.bytes_written, end_cycle=self.end_cycle)


@dataclass
class PackageResult:
    outputs: dict[str, np.ndarray]
    runs: list[ProgramRun] = field(default_factory=list)
    #: each program's `MeshRunResult` (kept when `run_package(keep_runs=True)`)
    mesh_runs: list = field(default_factory=list)
    #: the host steps run, in order
    host_runs: list[HostStepRun] = field(default_factory=list)

    @property
    def cycles(self) -> int:
        return sum(r.cycles for r in self.runs) + sum(h.cycles for h in self.host_runs)

    def report(self) -> dict:
        """The package report (docs/subgraph-split-fuse.md, "Program packages")."""
        return {
            "cycles": self.cycles,
            "programs": len(self.runs),
            "weight_load_bytes": sum(r.weight_load_bytes for r in self.runs),
            "host_in_bytes": sum(r.host_in_bytes for r in self.runs),
            "host_out_bytes": sum(r.host_out_bytes for r in self.runs),
            "noc_bytes": sum(r.noc_bytes for r in self.runs),
            "noc_byte_hops": sum(r.noc_byte_hops for r in self.runs),
            "host_steps": len(self.host_runs),
            "host_step_bytes": sum(h.bytes_read + h.bytes_written for h in self.host_runs),
            "host_step_cycles": sum(h.cycles for h in self.host_runs),
            "per_program": [r.report() for r in self.runs],
            "per_host_step": [h.report() for h in self.host_runs],
        }


def _weight_bytes(program) -> int:
    return sum(seg.size for sec in program.cores.values() for seg in sec.program.data)


def run_package(pkg: Package, inputs: Mapping[str, np.ndarray], target, keep_runs: bool = False) -> PackageResult:
    """Run the programs in order, parking every output in host memory. With
    `keep_runs`, each program's mesh run is kept (and recorded with events, for
    traces) in `PackageResult.mesh_runs`."""
    from nnx.sim.asm_mesh import read_mesh_program
    from nnx.sim.mesh_simulator import MeshSimulator

    host: dict[str, np.ndarray] = dict(inputs)
    for name, file in pkg.host_files.items():
        try:
            host[name] = np.load(file, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise PackageError(f"{pkg.path}: cannot read the host tensor '{name}' from {file}: {e}") from None
    link = target.host_link
    result = PackageResult({})
    t = 0
    for step in pkg.run_order():
        if step.kind == HOST_STEP:
            hr = run_host_step(pkg, step, host, link, t)
            result.host_runs.append(hr)
            t = hr.end_cycle
            continue
        path = step.path
        prog = read_mesh_program(path)
        sim = MeshSimulator(prog, target, record_events=keep_runs)
        needed = sim.input_names()
        missing = [n for n in needed if n not in host]
        if missing:
            raise PackageError(f"{path}: input '{missing[0]}' is neither a model input nor an earlier program's output")
        run = sim.run({n: host[n] for n in needed})
        wbytes = _weight_bytes(prog)
        pr = ProgramRun(
            os.path.basename(path), t, wbytes, link.transfer_cycles(wbytes),
            sum(host[n].nbytes for n in needed), sum(link.transfer_cycles(host[n].nbytes) for n in needed),
            run.cycles,
            sum(v.nbytes for v in run.outputs.values()),
            sum(link.transfer_cycles(v.nbytes) for v in run.outputs.values()),
            list(needed), list(run.outputs), run.noc_bytes, run.noc_byte_hops)
        host.update(run.outputs)
        result.runs.append(pr)
        if keep_runs:
            result.mesh_runs.append(run)
        t = pr.end_cycle
    source = {n: pkg.sources.get(n, n) for n in pkg.outputs}
    missing = [n for n in pkg.outputs if source[n] not in host]
    if missing:
        raise PackageError(f"{pkg.path}: no program produces the output '{source[missing[0]]}'")
    result.outputs = {n: host[source[n]] for n in pkg.outputs}
    return result


def run_host_step(pkg: Package, step: Step, host: dict[str, np.ndarray], link, start: int) -> HostStepRun:
    """Run a host step on the host tensors (`host`, updated with its results) with the
    reference interpreter; a file that does not parse, an input no earlier step
    wrote or a failing op is a one-line `PackageError` at the step's manifest line."""
    from nnx.diagnostics import DiagnosticException
    from nnx.interp.interpreter import InterpError, find_function, run_function
    from nnx.ir_io import read_module
    from nnx.split_fuse.chain import value_names

    where = f"{pkg.path}:{step.line}" if step.line else pkg.path
    name = os.path.basename(step.path)
    try:
        module = read_module(step.path)
        f = find_function(module, None)
    except Exception as e:  # noqa: BLE001 - any parse failure is the step file's fault: one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PackageError(f"{where}: host step {name}: {first}") from None
    names = value_names(f)
    args = [names.get(id(a), f"arg{a.index}") for a in f.body.block.args]
    missing = [n for n in args if n not in host]
    if missing:
        raise PackageError(f"{where}: host step {name}: input '{missing[0]}' is neither a model input nor an "
                           f"earlier step's output")
    try:
        outs = run_function(f, {n: host[n] for n in args})
    except (DiagnosticException, InterpError, ValueError, KeyError, TypeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PackageError(f"{where}: host step {name}: {first}") from None
    read = sum(host[n].nbytes for n in args)
    written = sum(np.asarray(v).nbytes for v in outs.values())
    cycles = sum(link.transfer_cycles(host[n].nbytes) for n in args)
    cycles += sum(link.transfer_cycles(np.asarray(v).nbytes) for v in outs.values())
    host.update({n: np.asarray(v) for n, v in outs.items()})
    return HostStepRun(name, start, read, written, cycles, args, list(outs))


def program_paths(asm_path: str, count: int) -> list[str]:
    """PROG.s -> PROG.p0.s ... PROG.p<count-1>.s (beside the manifest)."""
    base = asm_path[:-2] if asm_path.endswith(".s") else asm_path
    return [f"{base}.p{k}.s" for k in range(count)]


def write_package(compilations: Sequence, outputs: Sequence[str], asm_path: str,
                  sources: Mapping[str, str] | None = None,
                  host_tensors: Mapping[str, np.ndarray] | None = None) -> None:
    """Write the manifest, every program's assembly and weights, every host step's
    module (`PROG.h<k>.mlir`; an element of `compilations` that is a graph `ModuleOp`
    is a host step, the others `MeshCompilation`s) and the `.host` tensors
    (`PROG.host<k>.npy`): all or none. `sources`: outputs that are another host
    tensor (an input, another output, a host tensor)."""
    from xdsl.dialects.builtin import ModuleOp

    from nnx.atomic_file import atomic_outputs
    from nnx.ir_io import module_to_text
    from nnx.passes.lower_to_mesh import data_path
    from nnx.sim.asm_mesh import format_mesh_program

    is_step = [isinstance(c, ModuleOp) for c in compilations]
    progs = program_paths(asm_path, len(compilations) - sum(is_step))
    base = asm_path[:-2] if asm_path.endswith(".s") else asm_path
    step_paths = [f"{base}.h{k}.mlir" for k in range(sum(is_step))]
    host_tensors = dict(host_tensors or {})
    host_paths = [f"{base}.host{k}.npy" for k in range(len(host_tensors))]
    paths = [asm_path] + [p for s in progs for p in (s, data_path(s))] + step_paths + host_paths
    order: list[tuple[str, str]] = []
    ip = ih = 0
    for step in is_step:
        if step:
            order.append((HOST_STEP, os.path.basename(step_paths[ih])))
            ih += 1
        else:
            order.append((PROGRAM, os.path.basename(progs[ip])))
            ip += 1
    with atomic_outputs(paths) as temps:
        with open(temps[0], "w", encoding="utf-8") as f:
            f.write(format_manifest(outputs, [os.path.basename(p) for p in progs], sources,
                                    {n: os.path.basename(p) for n, p in zip(host_tensors, host_paths)}, order))
        programs = [c for c, st in zip(compilations, is_step) if not st]
        for k, comp in enumerate(programs):
            text = format_mesh_program(comp.program).replace(
                ".data prog.data ", f".data {os.path.basename(data_path(progs[k]))} ")
            with open(temps[1 + 2 * k], "w", encoding="utf-8") as f:
                f.write(text)
            with open(temps[2 + 2 * k], "wb") as f:
                f.write(comp.data)
        steps = [c for c, st in zip(compilations, is_step) if st]
        for tmp, module in zip(temps[1 + 2 * len(progs):], steps):
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(module_to_text(module))
        for tmp, value in zip(temps[1 + 2 * len(progs) + len(steps):], host_tensors.values()):
            with open(tmp, "wb") as f:
                np.save(f, value, allow_pickle=False)
