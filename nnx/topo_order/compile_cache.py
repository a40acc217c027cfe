"""Compiled subgraphs by content: compile each distinct (sub)graph once.

The key of a module is a hash of its printed IR (weights are resource handles, so the
text is small), the target file and the lowering options: a search that revisits an
order, or two subgraphs with the same content (repeated blocks), compile once. A
batch of modules not yet in the cache is compiled in a process pool: the pool forks
after the batch is built, so workers read the modules from their copy of the parent's
memory (and its weight blobs) and send back only the measurements.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp

_PENDING: list[ModuleOp] = []
_TARGET: tuple[str, bool] = ("", True)


@dataclass(frozen=True)
class Measured:
    """A compiled module's cycles: replayed (`simulate`), the cost model's (`model`),
    its busy cycles per unit and its instruction count."""

    simulate: int
    model: int
    busy: tuple[tuple[str, int], ...]
    instructions: int


def measure(module: ModuleOp, target_path: str, schedule: bool, keep_faster: bool = False) -> Measured:
    """Lower `module` (consumed) and time its program (`keep_faster`: as the default
    `lower-to-chip` does, the faster of the scheduled and unscheduled programs)."""
    from nnx.target import load_target
    from nnx.sim.timing import replay
    from nnx.topo_order.cost import compile_instrs, model_cycles

    target = load_target(target_path or None)
    instrs = compile_instrs(module, target_path, schedule, keep_faster)
    r = replay(instrs, target)
    return Measured(r.cycles, model_cycles(instrs, target), tuple(sorted(r.busy.items())), len(instrs))


def _work(i: int) -> Measured | str:
    try:
        return measure(_PENDING[i], *_TARGET)
    except Exception as e:  # noqa: BLE001 - reported by the parent
        return f"{type(e).__name__}: {e}"


@dataclass
class CompileCache:
    """Measurements by content hash; `jobs` worker processes for a batch."""

    target_path: str = ""
    schedule: bool = True
    jobs: int = 1
    entries: dict[str, Measured] = field(default_factory=dict)
    compiled: int = 0
    hits: int = 0

    def key(self, module: ModuleOp) -> str:
        h = hashlib.sha256(str(module).encode())
        h.update(f"|{self.target_path}|{self.schedule}".encode())
        return h.hexdigest()

    def measure_all(self, modules: Sequence[ModuleOp]) -> list[Measured]:
        """The measurement of every module (compiled in parallel when not cached)."""
        global _PENDING, _TARGET
        keys = [self.key(m) for m in modules]
        todo: dict[str, ModuleOp] = {}
        for k, m in zip(keys, modules):
            if k in self.entries or k in todo:
                self.hits += 1
            else:
                todo[k] = m
        if todo:
            items = list(todo.items())
            results: list[Measured | str]
            if self.jobs > 1 and len(items) > 1 and "fork" in _start_methods():
                import multiprocessing as mp

                _PENDING = [m for _, m in items]
                _TARGET = (self.target_path, self.schedule)
                try:
                    with mp.get_context("fork").Pool(min(self.jobs, len(items))) as pool:
                        results = pool.map(_work, range(len(items)))
                finally:
                    _PENDING = []
            else:
                results = []
                for _, m in items:
                    results.append(measure(m, self.target_path, self.schedule))
            for (k, _), r in zip(items, results):
                if isinstance(r, str):
                    raise RuntimeError(r)
                self.entries[k] = r
            self.compiled += len(items)
        return [self.entries[k] for k in keys]


def _start_methods() -> list[str]:
    import multiprocessing as mp

    return mp.get_all_start_methods()


def default_jobs() -> int:
    """Worker processes: the machine's cores (at most 4)."""
    return max(1, min(4, os.cpu_count() or 1))
