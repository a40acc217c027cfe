"""Where independent pieces of work run: the points of a sweep (docs/sweeps.md,
"Running on many cores or a Ray cluster") and the core programs of a mesh compilation
(docs/mesh.md, "Compilation"): one definition, two engines, the same results.

`run_points(points, fn, workers, ray)` calls `fn(point)` for every point and yields
the results as they finish (in completion order):

* without `ray`: a local pool of `workers` processes (`concurrent.futures`);
* with `ray`: one Ray task per point on the cluster at that address ("auto": the
  cluster this machine belongs to; "local": a Ray instance started for this run
  with `workers` CPUs and stopped at its end). Ray is the optional extra `nnx[ray]`.

`fn` must be a module-level function of plain data (it is pickled to the workers).
With `fork`, the local pool's workers are forked from this process, so `fn` may read
what the caller left in module-level state before the call (objects that do not
pickle, such as IR modules); the points are then only keys into it.
Workers run single-threaded BLAS (`WORKER_ENV`): the parallelism is across points.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

#: environment of the workers: one BLAS thread each
WORKER_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
              "NNX_THREADS": "1"}


def default_workers() -> int:
    """The number of cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _init_worker() -> None:
    os.environ.update(WORKER_ENV)


def _local(points: Sequence, fn: Callable, workers: int, fork: bool = False) -> Iterator[Any]:
    import multiprocessing

    context = multiprocessing.get_context("fork") if fork else None
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, mp_context=context)
    finished = False
    try:
        pending = {pool.submit(fn, p) for p in points}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                yield f.result()
        finished = True
    finally:  # interrupted: drop the queued points, do not wait for the running ones
        pool.shutdown(wait=finished, cancel_futures=not finished)


def _reachable(address: str, seconds: float = 5.0) -> str | None:
    """None when `address` ("host:port" or "ray://host:port") accepts a TCP
    connection within `seconds`, else why not (Ray itself retries for minutes)."""
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return None  # "auto" and other forms: Ray answers these quickly
    try:
        socket.create_connection((host, int(port)), timeout=seconds).close()
    except OSError as e:
        return e.strerror or str(e) or type(e).__name__
    return None


def _ray(points: Sequence, fn: Callable, workers: int, address: str) -> Iterator[Any]:
    from nnx.ir_io import UserError

    try:
        import ray
    except ImportError:
        raise UserError("--ray needs Ray: pip install 'nnx[ray]'") from None
    env = {"env_vars": dict(WORKER_ENV)}
    if address == "local":
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, runtime_env=env,
                 logging_level=logging.WARNING)
    else:
        why = _reachable(address)
        if why:
            raise UserError(f"--ray {address}: cannot connect: {why}")
        try:
            ray.init(address=address, log_to_driver=False, runtime_env=env, logging_level=logging.WARNING)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise UserError(f"--ray {address}: cannot connect: {str(e).strip().splitlines()[0]}") from None
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(fn)
        pending = [task.remote(p) for p in points]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        ray.shutdown()


def run_points(points: Sequence, fn: Callable, workers: int = 0, ray: str | None = None,
               fork: bool = False) -> Iterator[Any]:
    """`fn(point)` for every point, yielded as each finishes (module docstring);
    `workers` 0: `default_workers()`; `fork`: local workers forked from this process."""
    workers = workers or default_workers()
    if not points:
        return iter(())
    return _ray(points, fn, workers, ray) if ray else _local(points, fn, workers, fork)
