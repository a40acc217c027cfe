"""Compiled subgraphs by content: compile each distinct (sub)graph once.

The key of a module is a hash of its printed IR (weights are resource handles, so the
text is small), the target file and the lowering options: a search that revisits an
order, or two subgraphs with the same content (repeated blocks), compile once. A
batch of modules not yet in the cache is compiled in a process pool: the pool forks
after the batch is built, so workers read the modules from their copy of the parent's
memory (and its weight blobs) and send back only the measurements.
"""

from __future__ import annotations

import gc
import hashlib
import os
import time
from contextlib import nullcontext
from collections.abc import Callable, Sequence
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
    """In a worker process: measure pending module `i`; its measurement (or error
    text) and the worker's new tile plans, for the parent's memo."""
    from nnx.lowering.plan_memo import take_new

    take_new()
    # no automatic cyclic garbage collection in a worker: a full collection would walk
    # every object inherited from the parent, whose memory pages the fork shares
    # until touched. The lowering's garbage is young: one collection of the young
    # generations after each module frees it
    gc.disable()
    try:
        m: Measured | str = measure(_PENDING[i], _TARGET[0], _TARGET[1], direct=_TARGET[2])
    except Exception as e:  # noqa: BLE001 - reported by the parent
        m = f"{type(e).__name__}: {e}"
    gc.collect(1)
    return m, take_new()


def _work_timed(i: int) -> tuple[int, Measured | str, list, float]:
    t0 = time.monotonic()
    m, new = _work(i)
    return i, m, new, time.monotonic() - t0


def _fork_pool(n: int):
    """A pool of `n` worker processes forked from this one (they read the pending
    modules from their copy of its memory)."""
    import multiprocessing as mp

    return mp.get_context("fork").Pool(n)


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
    seconds: list[float] = field(default_factory=list)
    """Compile seconds of each module measured by `measure_until`."""

    def key(self, module: ModuleOp) -> str:
        h = hashlib.sha256(str(module).encode())
        h.update(f"|{self.target_path}|{self.schedule}".encode())  # direct: the same cycles
        return h.hexdigest()

    def _not_cached(self, modules: Sequence[ModuleOp]) -> tuple[list[str], dict[str, ModuleOp]]:
        """The key of each module, and the modules to compile (key -> module, each
        once); the others count as cache hits."""
        keys = [self.key(m) for m in modules]
        todo: dict[str, ModuleOp] = {}
        for k, m in zip(keys, modules):
            if k in self.entries or k in todo:
                self.hits += 1
            else:
                todo[k] = m
        return keys, todo

    def measure_all(self, modules: Sequence[ModuleOp]) -> list[Measured]:
        """The measurement of every module (compiled in parallel when not cached)."""
        global _PENDING, _TARGET
        keys, todo = self._not_cached(modules)
        if todo:
            from nnx.lowering.plan_memo import MAX_ENTRIES, plan_memo, take_new

            items = list(todo.items())
            results: list[Measured | str]
            with plan_memo(self.plans) if self.direct else nullcontext():
                if self.jobs > 1 and len(items) > 1 and "fork" in _start_methods():
                    _PENDING = [m for _, m in items]
                    _TARGET = (self.target_path, self.schedule, self.direct)
                    try:
                        with _fork_pool(min(self.jobs, len(items))) as pool:
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

    def measure_until(self, modules: Sequence[ModuleOp], deadline: float,
                      keep_going: Callable[[list[float], int], bool] | None = None) -> list[Measured | None]:
        """The measurement of each module compiled (or cached) before `deadline` (a
        `time.monotonic()` instant; None for the others). The modules not cached are
        compiled in the given order by one pool of `jobs` workers, which keep their
        tile-plan memo from one module to the next; at the deadline, or when
        `keep_going(seconds so far, modules not done)` says no after a module, the
        pool is stopped, whatever is half-compiled is dropped. `seconds` lists the
        compile time of each module measured (the wall time one worker took)."""
        global _PENDING, _TARGET
        keys, todo = self._not_cached(modules)
        items = list(todo.items())
        if items and time.monotonic() < deadline:
            from nnx.lowering.plan_memo import MAX_ENTRIES, plan_memo, take_new

            with plan_memo(self.plans) if self.direct else nullcontext():
                if self.jobs > 1 and len(items) > 1 and "fork" in _start_methods():
                    import multiprocessing as mp

                    _PENDING = [m for _, m in items]
                    _TARGET = (self.target_path, self.schedule, self.direct)
                    try:
                        done, start = 0, len(self.seconds)
                        with _fork_pool(min(self.jobs, len(items))) as pool:
                            it = pool.imap_unordered(_work_timed, range(len(items)))
                            for _ in items:
                                left = deadline - time.monotonic()
                                if left <= 0:
                                    break
                                try:
                                    i, r, new, sec = it.next(timeout=None if left == float("inf") else left)
                                except mp.TimeoutError:
                                    break
                                self._store(items[i][0], r, sec)
                                self.plans.update(new)
                                done += 1
                                if keep_going is not None and not keep_going(self.seconds[start:], len(items) - done):
                                    break
                            # leaving the block stops the workers still compiling
                    finally:
                        _PENDING = []
                    while len(self.plans) > MAX_ENTRIES:
                        del self.plans[next(iter(self.plans))]
                else:
                    # one process: a module is started when its compile, taken to
                    # last as long as the slowest so far, ends before the deadline
                    slowest = 0.0
                    start = len(self.seconds)
                    for done, (k, m) in enumerate(items):
                        if time.monotonic() + slowest > deadline:
                            break
                        if done and keep_going is not None and not keep_going(self.seconds[start:], len(items) - done):
                            break
                        t0 = time.monotonic()
                        r = measure(m, self.target_path, self.schedule, direct=self.direct)
                        sec = time.monotonic() - t0
                        slowest = max(slowest, sec)
                        self._store(k, r, sec)
                    take_new()
        return [self.entries.get(k) for k in keys]

    def _store(self, key: str, r: Measured | str, seconds: float) -> None:
        if isinstance(r, str):
            raise RuntimeError(r)
        self.entries[key] = r
        self.compiled += 1
        self.seconds.append(seconds)


def _start_methods() -> list[str]:
    import multiprocessing as mp

    return mp.get_all_start_methods()


def default_jobs() -> int:
    """Worker processes: the machine's cores (at most 4)."""
    return max(1, min(4, os.cpu_count() or 1))
