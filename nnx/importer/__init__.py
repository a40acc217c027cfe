"""ONNX -> graph dialect (`nnx-import`).

    from nnx.importer import import_onnx
    module = import_onnx("model.onnx", input_shapes={"x": (1, 3, 224, 224)}, batch=1)

Stages, one module each:

* onnx_loader  read and validate the file, load external data;
* onnx_graph   the working form: constants (initializers, Constant nodes), nodes
               in schedule order, graph inputs/outputs;
* shapes       fix dynamic input dims (--input-shape, --batch) and run ONNX shape
               inference with data propagation on a weight-stripped copy;
* folding      constant-fold (Shape/Size of static tensors, every node over
               constants, with the interpreter's kernels) to a fixpoint;
* normalize    bring each node into its graph op's opset form;
* builder      emit `func.func @main` of graph ops with names kept;
* output       stream the module text with its blobs (nnx-import's writer).

Every user mistake is an `nnx.ir_io.UserError` with a one-line message.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp

from nnx.ir_io import UserError

__all__ = ["UserError", "import_model", "import_onnx"]


def import_onnx(
    path: str,
    input_shapes: Mapping[str, tuple[int, ...]] | None = None,
    batch: int | None = None,
    constants: Mapping[str, np.ndarray] | None = None,
    keep_initializer_inputs: bool = False,
    training: bool | None = None,
) -> ModuleOp:
    """Import the ONNX file at `path` into a module with one `func.func @main`.

    `input_shapes` fixes graph input shapes, `batch` every dynamic leading dim;
    `constants` binds graph inputs to values (they become constants, not arguments:
    e.g. the axes/shape/scales inputs of ONNX node tests). A graph input that also has
    an initializer (every weight of an IR version 3 model) is that constant, unless
    `keep_initializer_inputs`: then it is a function argument like any other input.
    `training=True` keeps every node that reads a float initializer (a parameter) an
    op, as graph-autodiff needs; False folds them; None (default) decides by the model
    (a training-mode BatchNormalization or Dropout), see docs/training.md.
    """
    from nnx.importer.onnx_loader import load_model

    model = load_model(path)
    return import_model(model, input_shapes, batch, path, constants, keep_initializer_inputs, training)


def import_model(
    model: onnx.ModelProto,
    input_shapes: Mapping[str, tuple[int, ...]] | None = None,
    batch: int | None = None,
    path: str = "<model>",
    constants: Mapping[str, np.ndarray] | None = None,
    keep_initializer_inputs: bool = False,
    training: bool | None = None,
) -> ModuleOp:
    """Import an in-memory ModelProto (tensor data already loaded); see import_onnx."""
    from nnx.importer.builder import build_module, check_domains
    from nnx.importer.folding import resolve_static
    from nnx.importer.onnx_graph import ImportGraph
    from nnx.importer.onnx_loader import validate_model
    from nnx.importer.shapes import fix_input_types

    if batch is not None and batch < 1:
        raise UserError(f"--batch must be a positive integer, not {batch}")
    validate_model(model, path)
    from nnx.importer.builder import _ALIAS_OPS, _graph_ops
    from nnx.importer.expand import expand_functions

    model = expand_functions(model, set(_graph_ops()) | set(_ALIAS_OPS))
    ig = ImportGraph.from_model(model, path, keep_initializer_inputs)
    ig.training = training
    if constants:
        ig.bind_inputs(dict(constants))
    check_domains(ig)
    input_types = fix_input_types(ig.inputs, dict(input_shapes or {}), batch)
    types, strict_error = resolve_static(ig, input_types)
    return build_module(ig, input_types, types, strict_error)
