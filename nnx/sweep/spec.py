"""The sweep file (docs/sweeps.md, "The sweep file"): models, pipelines, a base target
with a grid over its keys, and the metrics to keep.

    models = [{ path = "a.onnx" }, { path = "bert.onnx", input_shapes = { input_ids = [1, 32] } }]
    pipelines = ["default", "builtin.module(graph-fold-constants,canonicalize,dce,lower-to-chip{schedule=false})"]
    metrics = ["cycles", "noc_byte_hops"]
    mode = "simulate"            # or "profile" (nnx-profile's report; no lowering)
    [target]
    base = "targets/mesh.toml"   # or a built-in target: "default", "mesh"
    [target.grid]
    "mesh.width" = [2, 4]
    "mesh.core_memory_bytes" = [1048576, 2097152]

Paths are relative to the sweep file. `load_sweep` checks everything that does not
need a compilation: every key is known, every model file exists, every pipeline
parses, every grid key names a key of the target format and each of its values
makes a valid target on its own. A mistake is a `SweepError`: one line naming the
file and the key.
"""

from __future__ import annotations

import copy
import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

from nnx.ir_io import UserError

#: the keys of a sweep file, of a model entry and of the [target] table
TOP_KEYS = ("models", "pipelines", "metrics", "mode", "target")
MODEL_KEYS = ("path", "input_shapes", "name")
TARGET_KEYS = ("base", "grid")
#: what each point does: compile and simulate, or profile the graph (nnx-profile)
MODES = ("simulate", "profile")
DEFAULT_PIPELINE = "default"


class SweepError(UserError):
    """A mistake in a sweep file (one line: the file, the key, what is wrong)."""


@dataclass(frozen=True)
class ModelSpec:
    """One model of a sweep: its ONNX file (absolute path), the static shapes of its
    inputs and the name its rows carry (default: the file name without `.onnx`)."""

    path: str
    name: str
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class SweepSpec:
    """A parsed sweep file: `grid` maps dotted target keys to their values, in file
    order; `base` is the base target's TOML data."""

    source: str
    models: tuple[ModelSpec, ...]
    pipelines: tuple[str, ...]
    metrics: tuple[str, ...]
    base: dict[str, Any]
    grid: dict[str, list[Any]]
    mode: str = "simulate"


def set_dotted(data: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A deep copy of `data` with the dotted `key` (e.g. "mesh.noc.routing") set to
    `value`, creating missing tables."""
    out = copy.deepcopy(data)
    node = out
    *tables, last = key.split(".")
    for t in tables:
        node = node.setdefault(t, {})
        if not isinstance(node, dict):
            raise KeyError(t)
    node[last] = value
    return out


def base_target_data(base: str, source: str) -> dict[str, Any]:
    """The TOML data of the base target: a built-in name or a file relative to the
    sweep file `source`."""
    from nnx.target import BUILTIN_TARGETS

    if base in BUILTIN_TARGETS:
        return tomllib.loads(BUILTIN_TARGETS[base])
    path = os.path.join(os.path.dirname(os.path.abspath(source)), base)
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise SweepError(f"{source}: key 'target.base': cannot read {base}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise SweepError(f"{source}: key 'target.base': {base}: malformed TOML: {e}") from None


def _fail(source: str, key: str, why: str) -> SweepError:
    return SweepError(f"{source}: key '{key}': {why}")


def _unknown(source: str, table: dict, known: tuple[str, ...], where: str) -> None:
    for k in table:
        if k not in known:
            raise _fail(source, f"{where}{k}", f"unknown key (expected one of: {', '.join(known)})")


def _check_shapes(source: str, where: str, path: str, shapes: dict[str, Any]) -> None:
    """Each given input shape names a graph input of the ONNX file, with its rank
    and its fixed dimensions; every input with a symbolic dimension has a shape."""
    import onnx

    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as e:  # noqa: BLE001 - any unreadable model is the sweep file's mistake
        raise _fail(source, f"{where}.path", f"not an ONNX model: {(str(e).splitlines() or [''])[0]}") from None
    init = {i.name for i in model.graph.initializer}
    inputs = {vi.name: [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
              for vi in model.graph.input if vi.name not in init}
    for k, v in shapes.items():
        if k not in inputs:
            raise _fail(source, f"{where}.input_shapes.{k}", f"the model has no input '{k}' (inputs: {', '.join(inputs)})")
        dims = inputs[k]
        if len(v) != len(dims) or any(d is not None and d != g for d, g in zip(dims, v)):
            shown = "x".join("?" if d is None else str(d) for d in dims)
            raise _fail(source, f"{where}.input_shapes.{k}", f"{v} does not match the model's shape {shown}")
    for k, dims in inputs.items():
        if k not in shapes and None in dims:
            raise _fail(source, f"{where}.input_shapes", f"input '{k}' has a symbolic dimension: give its shape")


def _models(source: str, raw: Any) -> tuple[ModelSpec, ...]:
    if not isinstance(raw, list) or not raw:
        raise _fail(source, "models", "must be a non-empty list of tables like { path = \"m.onnx\" }")
    here = os.path.dirname(os.path.abspath(source))
    out = []
    for i, m in enumerate(raw):
        where = f"models[{i}]"
        if not isinstance(m, dict):
            raise _fail(source, where, "must be a table like { path = \"m.onnx\" }")
        _unknown(source, m, MODEL_KEYS, f"{where}.")
        if not isinstance(m.get("path"), str) or not m["path"]:
            raise _fail(source, f"{where}.path", "missing (the ONNX file)")
        path = os.path.join(here, m["path"])
        if not os.path.isfile(path):
            raise _fail(source, f"{where}.path", f"no such file: {m['path']}")
        shapes = m.get("input_shapes", {})
        if not isinstance(shapes, dict):
            raise _fail(source, f"{where}.input_shapes", "must be a table of NAME = [dims]")
        for k, v in shapes.items():
            if not isinstance(v, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in v):
                raise _fail(source, f"{where}.input_shapes.{k}", f"must be a list of positive integers, got {v!r}")
        _check_shapes(source, where, path, shapes)
        name = m.get("name", os.path.splitext(os.path.basename(path))[0])
        if not isinstance(name, str) or not name:
            raise _fail(source, f"{where}.name", "must be a non-empty string")
        out.append(ModelSpec(path, name, {k: tuple(v) for k, v in shapes.items()}))
    names = [m.name for m in out]
    for i, n in enumerate(names):
        if names.index(n) != i:
            raise _fail(source, f"models[{i}].name", f"'{n}' names two models (give each a distinct name)")
    return tuple(out)


def _pipelines(source: str, raw: Any) -> tuple[str, ...]:
    from xdsl.utils.exceptions import ArgSpecParseError

    from nnx.api import compile_pipeline

    if raw is None:
        return (DEFAULT_PIPELINE,)
    if not isinstance(raw, list) or not raw or not all(isinstance(p, str) and p.strip() for p in raw):
        raise _fail(source, "pipelines", "must be a non-empty list of pipeline strings (or \"default\")")
    for i, p in enumerate(raw):
        if p != DEFAULT_PIPELINE:
            try:  # every pass known, every option valid
                compile_pipeline(p, what=f"pipelines[{i}]")
            except (UserError, ValueError, ArgSpecParseError) as e:
                why = str(e).strip().splitlines()[0].removeprefix(f"pipelines[{i}]: ")
                raise _fail(source, f"pipelines[{i}]", why) from None
    if len(set(raw)) != len(raw):
        raise _fail(source, "pipelines", "a pipeline is listed twice")
    return tuple(raw)


def _grid(source: str, target: dict[str, Any], base: dict[str, Any]) -> dict[str, list[Any]]:
    from nnx.target import TargetError, target_from_dict

    if "grid" not in target:
        return {}
    grid = target["grid"]
    if not isinstance(grid, dict) or not grid:
        raise _fail(source, "target.grid", "empty: give at least one dotted target key with a list of values")
    out: dict[str, list[Any]] = {}
    for key, values in grid.items():
        where = f"target.grid.\"{key}\""
        if isinstance(values, dict):
            raise _fail(source, where, "must be a list of values; quote dotted keys: \"mesh.width\" = [2, 4]")
        if not isinstance(values, list) or not values:
            raise _fail(source, where, "empty grid: give a non-empty list of values")
        if len({repr(v) for v in values}) != len(values):
            raise _fail(source, where, "a value is listed twice")
        for v in values:
            try:
                target_from_dict(set_dotted(base, key, v), f"{source}: target.grid")
            except KeyError:
                raise _fail(source, where, "unknown target key (its table is a value in the base target)") from None
            except TargetError as e:
                m = re.search(r"key '([^']*)': (.*)", str(e))
                what, why = (m.group(1), m.group(2)) if m else (key, str(e))
                if why.startswith("unknown"):
                    raise _fail(source, where, f"unknown target key ('{what}': {why})") from None
                raise _fail(source, where, f"value {v!r}: '{what}' {why}") from None
        out[key] = values
    return out


def load_sweep(path: str) -> SweepSpec:
    """Parse and check the sweep file `path` (module docstring)."""
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except OSError as e:
        raise SweepError(f"{path}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise SweepError(f"{path}: malformed TOML: {e}") from None
    _unknown(path, raw, TOP_KEYS, "")
    models = _models(path, raw.get("models"))
    pipelines = _pipelines(path, raw.get("pipelines"))
    metrics = raw.get("metrics")
    if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) and m for m in metrics):
        raise _fail(path, "metrics", "must be a non-empty list of run-report keys, e.g. [\"cycles\"]")
    if len(set(metrics)) != len(metrics):
        raise _fail(path, "metrics", "a metric is listed twice")
    mode = raw.get("mode", MODES[0])
    if mode not in MODES:
        raise _fail(path, "mode", f"must be one of {', '.join(MODES)}, got {mode!r}")
    target = raw.get("target", {})
    if not isinstance(target, dict):
        raise _fail(path, "target", "must be a table with `base` and `grid`")
    _unknown(path, target, TARGET_KEYS, "target.")
    base_name = target.get("base", "default")
    if not isinstance(base_name, str) or not base_name:
        raise _fail(path, "target.base", "must be a target file or a built-in target name")
    base = base_target_data(base_name, path)
    grid = _grid(path, target, base)
    clash = set(grid) & {"model", "pipeline", "status", "seconds", "key", *metrics}
    if clash:
        raise _fail(path, f"target.grid.\"{sorted(clash)[0]}\"", "clashes with a column of the results")
    return SweepSpec(path, models, pipelines, tuple(metrics), base, grid, mode)
