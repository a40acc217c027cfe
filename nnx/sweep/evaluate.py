"""The work of one sweep point (docs/sweeps.md, "What a point does"), run in a worker
process (a local pool or a Ray task, nnx/executor.py).

`evaluate_point` imports the model (once per worker process and model: later points
clone the cached module), compiles it for the point's target with the point's
pipeline and runs the program on the simulator, as nnx-compile and nnx-run do
(`nnx.api.compile_files`, `nnx.api.run_report`); in `profile` mode it runs the
pipeline without lowering and takes nnx-profile's report instead. The row holds the
metrics looked up in that report (a dotted metric such as `offchip.weight_bytes`
reaches into a sub-table), `status` "ok" or the one-line error of a point that does
not compile, fit or run, and the seconds the point took. Inputs are random with a
fixed seed, from the model's input shapes and element types.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time
from typing import Any

import numpy as np

from .points import Point, file_digest
from .spec import DEFAULT_PIPELINE

#: per worker process: imported modules and sample inputs, by model content
_IMPORTED: dict[tuple, Any] = {}
#: the seed of the sample inputs
INPUT_SEED = 0


#: the modules a point's work imports on first use (nnx.api's lazy imports)
POINT_MODULES = ("onnx", "nnx.api", "nnx.importer", "nnx.interp.interpreter", "nnx.mesh.compile",
                 "nnx.passes.lower_to_mesh", "nnx.split_fuse.programs", "nnx.sim.asm_mesh", "nnx.sim.mesh_cli",
                 "nnx.sim.mesh_simulator", "nnx.sim.package", "nnx.sim.report", "nnx.sim.simulator",
                 "nnx.tools.nnx_profile", "nnx.tools.nnx_translate")


def preload() -> None:
    """Import what a point's work needs, once: a local pool's workers are forked
    from this process and inherit it instead of each importing it again (on a
    busy machine that is CPU time the points do not get)."""
    import importlib

    for name in POINT_MODULES:
        importlib.import_module(name)


def _model_key(point: Point) -> tuple:
    return (point.model.path, file_digest(point.model.path), tuple(sorted(point.model.input_shapes.items())))


def sample_inputs(path: str, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """Random inputs of an ONNX model by input name: the given shapes, else the
    file's (a symbolic dimension is 1); floats standard normal, integers 0."""
    import onnx
    from onnx.helper import tensor_dtype_to_np_dtype

    model = onnx.load(path, load_external_data=False)
    init = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(INPUT_SEED)
    out = {}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        tt = vi.type.tensor_type
        shape = shapes.get(vi.name) or tuple(d.dim_value if d.dim_value > 0 else 1 for d in tt.shape.dim)
        dtype = tensor_dtype_to_np_dtype(tt.elem_type)
        out[vi.name] = (rng.standard_normal(shape).astype(dtype) if np.issubdtype(dtype, np.floating)
                        else np.zeros(shape, dtype))
    return out


def _imported(point: Point):
    """(a fresh copy of the imported module, the sample inputs) of the point's model."""
    from nnx import api

    key = _model_key(point)
    if key not in _IMPORTED:
        m = point.model
        _IMPORTED[key] = (api.import_onnx(m.path, m.input_shapes or None), sample_inputs(m.path, m.input_shapes))
    module, inputs = _IMPORTED[key]
    return module.clone(), inputs


def _report(point: Point, workdir: str) -> dict[str, Any]:
    from nnx import api

    target = os.path.join(workdir, "target.toml")
    with open(target, "w", encoding="utf-8") as f:
        f.write(point.target_toml)
    module, inputs = _imported(point)
    pipeline = None if point.pipeline == DEFAULT_PIPELINE else point.pipeline
    if point.mode == "profile":
        from nnx.interp.interpreter import find_function
        from nnx.tools.nnx_profile import profile

        api.run_pipeline(module, pipeline or api.default_pipeline(target, lower=False),
                         filename=point.model.path, verify_each=False)
        return profile(find_function(module, None), api.load_target(target))[0]
    prog = os.path.join(workdir, "prog.s")
    api.compile_files(module, prog, target, pipeline, filename=point.model.path)
    return api.run_report(prog, inputs, target)


def metric_value(report: dict[str, Any], name: str) -> Any:
    """The value of a (dotted) metric in a run report; KeyError when absent."""
    node: Any = report
    for part in name.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(name)
        node = node[part]
    return node


def error_line(e: BaseException) -> str:
    """The one-line status of a failed point: the user-facing message of the
    project's error types, else the exception's type and first line."""
    from nnx.cli import is_user_error

    text = (str(e).strip().splitlines() or [""])[0]
    return text if is_user_error(e) else f"internal error: {type(e).__name__}: {text}"


def evaluate_point(point: Point) -> dict[str, Any]:
    """The result row of one point (module docstring)."""
    t0 = time.perf_counter()
    row: dict[str, Any] = {"model": point.model.name, "pipeline": point.pipeline, **dict(point.grid)}
    row.update({m: "" for m in point.metrics})
    status = "ok"
    sink = io.StringIO()  # passes' remarks and prints stay out of the progress bar
    try:
        with tempfile.TemporaryDirectory(prefix="nnx-sweep-") as d, \
                contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            report = _report(point, d)
        missing = []
        for m in point.metrics:
            try:
                row[m] = metric_value(report, m)
            except KeyError:
                missing.append(m)
        if missing:
            keys = ", ".join(sorted(k for k, v in report.items() if not isinstance(v, (dict, list))))
            status = f"not in the run report: {', '.join(missing)} (it has: {keys})"
    except Exception as e:  # noqa: BLE001 - a point that fails is a row, not a crash
        status = error_line(e)
    row["status"] = status
    row["seconds"] = round(time.perf_counter() - t0, 3)
    row["key"] = point.key
    return row
