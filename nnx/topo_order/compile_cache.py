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
from contextlib import nullcontext
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp

_PENDING: list[ModuleOp] = []
_TARGET: tuple[str, bool, bool] = ("", True, True)


@dataclass(frozen=True)
class Measured:
    """A compiled module's cycles: replayed (`simulate`), the cost model's (`model`),
    its busy cycles per unit and its instruction count."""

    simulate: int
    model: int
    busy: tuple[tuple[str, int], ...]
    instructions: int


def measure(module: ModuleOp, target_path: str, schedule: bool, keep_faster: bool = False,
            direct: bool = False) -> Measured:
    """Lower `module` (consumed) and time its program (`keep_faster`: as the default
    `lower-to-chip` does, the faster of the scheduled and unscheduled programs).
    `direct`: time the lowering's instructions without building chip IR
    (`cost.direct_instrs`, the same cycles) instead of running `lower-to-chip`."""
    from nnx.target import load_target
    from nnx.sim.timing import replay
    from nnx.topo_order.cost import compile_instrs, direct_instrs, model_cycles

    target = load_target(target_path or None)
    instrs = (direct_instrs if direct else compile_instrs)(module, target_path, schedule, keep_faster)
    r = replay(instrs, target)
    return Measured(r.cycles, model_cycles(instrs, target), tuple(sorted(r.busy.items())), len(instrs))


def _work(i: int) -> tuple[Measured | str, list]:
    from nnx.lowering.plan_memo import take_new

    take_new()
    try:
        m: Measured | str = measure(_PENDING[i], _TARGET[0], _TARGET[1], direct=_TARGET[2])
    except Exception as e:  # noqa: BLE001 - reported by the parent
        m = f"{type(e).__name__}: {e}"
    return m, take_new()  # the worker's new tile plans, for the parent's memo


@dataclass
class CompileCache:
    """Measurements by content hash; `jobs` worker processes for a batch. `direct`:
    measure by `cost.direct_instrs` with the MPU tile plans memoized across every
    module measured (`nnx.lowering.plan_memo`; workers send theirs back), else by
    `lower-to-chip` on chip IR, each module from scratch."""

    target_path: str = ""
    schedule: bool = True
    jobs: int = 1
    direct: bool = True
    entries: dict[str, Measured] = field(default_factory=dict)
    plans: dict = field(default_factory=dict)
    compiled: int = 0
    hits: int = 0

    def key(self, module: ModuleOp) -> str:
        h = hashlib.sha256(str(module).encode())
        h.update(f"|{self.target_path}|{self.schedule}".encode())  # direct: the same cycles
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
            from nnx.lowering.plan_memo import MAX_ENTRIES, plan_memo, take_new

            items = list(todo.items())
            results: list[Measured | str]
            with plan_memo(self.plans) if self.direct else nullcontext():
                if self.jobs > 1 and len(items) > 1 and "fork" in _start_methods():
                    import multiprocessing as mp

                    _PENDING = [m for _, m in items]
                    _TARGET = (self.target_path, self.schedule, self.direct)
                    try:
                        with mp.get_context("fork").Pool(min(self.jobs, len(items))) as pool:
                            done = pool.map(_work, range(len(items)))
                    finally:
                        _PENDING = []
                    results = [r for r, _ in done]
                    for _, new in done:
                        self.plans.update(new)
                    while len(self.plans) > MAX_ENTRIES:
                        del self.plans[next(iter(self.plans))]
                else:
                    results = [measure(m, self.target_path, self.schedule, direct=self.direct) for _, m in items]
                    take_new()  # in this process the plans are in self.plans already
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
