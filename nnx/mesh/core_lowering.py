"""The core programs of a mesh compilation lowered side by side (docs/mesh.md,
"Compilation time").

Every core's module is built (`core_graph.build_stage_module`) and lowered by the
single-core chip passes (`compile._lower_stage`) on its own: the program of one
depends only on the plan and the target, so the programs can be made in any order
and in any process. The latency schedule lowers a program for every core of the
mesh (ResNet-18 on 16 x 16 cores: 256 programs of about 60 op parts, seconds each),
so `lower_cores` runs the jobs over a local process pool (the project's executor,
nnx/executor.py). The workers are forked from this process: they inherit the plan
and the graph (xDSL IR does not pickle) and the weights' resource blobs, build the
stage modules and send back the lowered programs (plain data). The programs are
the same bytes as when made one after another in this process
(test/python/test_mesh_schedules.py).

A lowering that raises in a worker is run again in this process, so its error is
the one the sequential lowering gives (an exception carrying IR may not pickle).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

#: fewer programs than this are lowered in this process (a pool costs more than it saves)
MIN_PARALLEL = 8

#: the lowering jobs of the `lower_cores` call in progress, and the step run on each
#: lowered program (read by the forked workers)
_JOBS: list[tuple] = []
_FINISH: list = []


def core_workers() -> int:
    """Processes that lower core programs: NNX_THREADS when set (1: all in this
    process), else the cores this process may use."""
    from nnx.executor import default_workers

    n = os.environ.get("NNX_THREADS")
    return max(1, int(n)) if n and n.isdigit() else default_workers()


def _tile_args(t):
    from nnx.sim.isa import Tile

    return Tile, (t.space, t.offset, t.shape, t.dtype, t.strides)


def _instr_args(i):
    from nnx.sim.isa import Instr

    return Instr, (i.unit, i.mnemonic, i.dsts, i.srcs, i.attrs, i.opts, i.token, i.line, i.comment)


def _send_plainly() -> None:
    """Tiles and instructions travel from the workers as their constructors'
    arguments: a lowered program has thousands of each, and a frozen dataclass's
    default pickling sets every field through Python (a third of the transfer)."""
    from multiprocessing.reduction import ForkingPickler

    from nnx.sim.isa import Instr, Tile

    ForkingPickler.register(Tile, _tile_args)
    ForkingPickler.register(Instr, _instr_args)


def _lower_job(s: int):
    """(s, the program of job s), or (s, None) when its lowering raised."""
    try:
        prog = _JOBS[s](s)
        return s, _FINISH[0](s, prog) if _FINISH else prog
    except Exception:  # noqa: BLE001 - lowered again in the parent, which raises it
        return s, None


def lower_cores(jobs: Sequence[Callable[[int], object]], order: Sequence[int], workers: int = 0,
                finish: Callable | None = None) -> Iterator[tuple[int, object]]:
    """(s, program) for each job, the program `jobs[s](s)` (a stage's module built and
    lowered: `compile._lower_in_order`), s in `order` (the caller may stop early: the jobs not started are dropped); with
    `finish`, the program is `finish(s, lowered program)`, run where it was lowered
    (the NoC messages added in the workers: docs/mesh.md, "Compilation time"). With
    `workers` (0: `core_workers()`) above 1 and at least MIN_PARALLEL jobs, the
    programs come from forked worker processes as they finish, else one after
    another in `order`, in this process."""
    import gc

    from nnx.lowering.plan_memo import plan_memo

    def lower(s: int):
        prog = jobs[s](s)
        return finish(s, prog) if finish else prog

    workers = workers or core_workers()
    # the compiler's heap (the graph, every core's module) is long-lived: frozen, the
    # garbage collector no longer walks it while the lowerings allocate (ResNet-18 on
    # 16 x 16 cores: a third of each lowering's time was collections)
    gc.freeze()
    # the parts of one op on many cores are the same MPU tiling problem: planned once
    # per process (the plan memo, nnx/lowering/plan_memo.py; forked workers inherit it)
    try:
        with plan_memo():
            if workers <= 1 or len(order) < MIN_PARALLEL or _JOBS:
                for s in order:
                    yield s, lower(s)
                return
            from nnx.executor import run_points

            _send_plainly()
            _JOBS[:] = jobs
            _FINISH[:] = [finish] if finish else []
            try:
                for s, prog in run_points(list(order), _lower_job, workers, fork=True):
                    yield s, (lower(s) if prog is None else prog)
            finally:
                _JOBS.clear()
                _FINISH.clear()
    finally:
        gc.unfreeze()
