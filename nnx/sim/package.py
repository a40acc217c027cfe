"""Program packages: a model run as a sequence of mesh programs
(docs/subgraph-split-fuse.md, "Program packages").

A package is a manifest at `PROG.s` plus one mesh program file set per program
(`PROG.p<k>.s` and its weights `PROG.p<k>.data`). The manifest is text:

    .package 3                 # number of programs
    .outputs h1 h2 y           # the model's outputs, in order
    .program prog.p0.s         # the programs, in the order they run (paths relative
    .program prog.p1.s         # to the manifest's directory)
    .program prog.p2.s

Each program's `.input`/`.output` names are model input/output names or the names of
values parked in host memory between programs (`t<op>_<result>`). Running a package
(`run_package`): for each program in order, its weights are loaded from the host
over the host link, its inputs read from host memory, it runs on the mesh simulator,
and all its outputs are written back to host memory. Total cycles = the sum over
programs of weight-load cycles + input transfer cycles + mesh-run cycles + output
transfer cycles (one host-link transfer per tensor, `Target.host_link`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

MAGIC = ".package"


class PackageError(Exception):
    """A malformed package manifest (one line: file:line: what)."""


@dataclass(frozen=True)
class Package:
    path: str
    outputs: list[str]
    programs: list[str]  # absolute paths


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


def format_manifest(outputs: Sequence[str], programs: Sequence[str]) -> str:
    lines = [f"{MAGIC} {len(programs)}", ".outputs " + " ".join(outputs)]
    lines += [f".program {p}" for p in programs]
    return "\n".join(lines) + "\n"


def read_package(path: str) -> Package:
    """Parse a manifest; errors are one-line `PackageError`s."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    count, outputs, programs = None, [], []
    base = os.path.dirname(os.path.abspath(path))
    for n, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == MAGIC and len(words) == 2 and words[1].isdigit():
            count = int(words[1])
        elif words[0] == ".outputs":
            outputs = words[1:]
        elif words[0] == ".program" and len(words) == 2:
            programs.append(os.path.join(base, words[1]))
        else:
            raise PackageError(f"{path}:{n}: unknown package directive '{raw.strip()}'")
    if count is None or count != len(programs):
        raise PackageError(f"{path}: '.package N' must give the number of '.program' lines ({len(programs)})")
    return Package(path, outputs, programs)


@dataclass
class ProgramRun:
    """One program of a package run: its cycles split into parts, and bytes moved."""

    program: str
    weight_load_bytes: int
    weight_load_cycles: int
    host_in_bytes: int
    host_out_bytes: int
    host_cycles: int
    mesh_cycles: int

    @property
    def cycles(self) -> int:
        return self.weight_load_cycles + self.host_cycles + self.mesh_cycles


@dataclass
class PackageResult:
    outputs: dict[str, np.ndarray]
    runs: list[ProgramRun] = field(default_factory=list)

    @property
    def cycles(self) -> int:
        return sum(r.cycles for r in self.runs)

    def report(self) -> dict:
        return {
            "cycles": self.cycles,
            "programs": len(self.runs),
            "per_program": [dict(vars(r), cycles=r.cycles) for r in self.runs],
        }


def _weight_bytes(program) -> int:
    return sum(seg.size for sec in program.cores.values() for seg in sec.program.data)


def run_package(pkg: Package, inputs: Mapping[str, np.ndarray], target) -> PackageResult:
    """Run the programs in order, parking every output in host memory."""
    from nnx.sim.asm_mesh import read_mesh_program
    from nnx.sim.mesh_simulator import MeshSimulator

    host: dict[str, np.ndarray] = dict(inputs)
    link = target.host_link
    result = PackageResult({})
    for path in pkg.programs:
        prog = read_mesh_program(path)
        sim = MeshSimulator(prog, target)
        needed = sim.input_names()
        missing = [n for n in needed if n not in host]
        if missing:
            raise PackageError(f"{path}: input '{missing[0]}' is neither a model input nor an earlier program's output")
        run = sim.run({n: host[n] for n in needed})
        wbytes = _weight_bytes(prog)
        in_bytes = sum(host[n].nbytes for n in needed)
        out_bytes = sum(v.nbytes for v in run.outputs.values())
        host_cycles = sum(link.transfer_cycles(host[n].nbytes) for n in needed)
        host_cycles += sum(link.transfer_cycles(v.nbytes) for v in run.outputs.values())
        host.update(run.outputs)
        result.runs.append(ProgramRun(os.path.basename(path), wbytes, link.transfer_cycles(wbytes), in_bytes,
                                      out_bytes, host_cycles, run.cycles))
    missing = [n for n in pkg.outputs if n not in host]
    if missing:
        raise PackageError(f"{pkg.path}: no program produces the output '{missing[0]}'")
    result.outputs = {n: host[n] for n in pkg.outputs}
    return result


def program_paths(asm_path: str, count: int) -> list[str]:
    """PROG.s -> PROG.p0.s ... PROG.p<count-1>.s (beside the manifest)."""
    base = asm_path[:-2] if asm_path.endswith(".s") else asm_path
    return [f"{base}.p{k}.s" for k in range(count)]


def write_package(compilations: Sequence, outputs: Sequence[str], asm_path: str) -> None:
    """Write the manifest and every program's assembly and weights: all or none."""
    from nnx.atomic_file import atomic_outputs
    from nnx.passes.lower_to_mesh import data_path
    from nnx.sim.asm_mesh import format_mesh_program

    progs = program_paths(asm_path, len(compilations))
    paths = [asm_path] + [p for s in progs for p in (s, data_path(s))]
    with atomic_outputs(paths) as temps:
        with open(temps[0], "w", encoding="utf-8") as f:
            f.write(format_manifest(outputs, [os.path.basename(p) for p in progs]))
        for k, comp in enumerate(compilations):
            text = format_mesh_program(comp.program).replace(
                ".data prog.data ", f".data {os.path.basename(data_path(progs[k]))} ")
            with open(temps[1 + 2 * k], "w", encoding="utf-8") as f:
                f.write(text)
            with open(temps[2 + 2 * k], "wb") as f:
                f.write(comp.data)
