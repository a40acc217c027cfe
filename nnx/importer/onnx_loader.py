"""Reading an ONNX file: parse the protobuf, load external data, basic validation.

Every failure is a `UserError` whose message names the file (the tool prefixes
`nnx-import: error: `). A truncated or corrupt file is reported as such instead of
surfacing protobuf's DecodeError.
"""

from __future__ import annotations

import os

import onnx
from onnx import ModelProto

from nnx.ir_io import UserError

DEFAULT_DOMAINS = ("", "ai.onnx")


def load_model(path: str) -> ModelProto:
    """Parse `path` into a ModelProto with all tensor data in memory."""
    if not os.path.exists(path):
        raise UserError(f"{path}: no such file")
    if os.path.isdir(path):
        raise UserError(f"{path}: is a directory, not an ONNX file")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    return parse_model_bytes(data, path)


def parse_model_bytes(data: bytes, path: str = "<bytes>") -> ModelProto:
    if not data:
        raise UserError(f"{path}: empty file, not an ONNX model")
    model = ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as e:  # noqa: BLE001 - protobuf raises DecodeError/RuntimeError
        detail = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UserError(
            f"{path}: not a valid ONNX model (truncated or corrupt file: {detail})"
        ) from None
    validate_model(model, path)
    if _uses_external_data(model):
        _load_external(model, path)
    return model


def validate_model(model: ModelProto, path: str) -> None:
    """Cheap structural checks that catch truncated or non-ONNX protobufs."""
    if not model.HasField("graph"):
        raise UserError(f"{path}: not an ONNX model (no graph; truncated or corrupt file?)")
    if model.ir_version <= 0:
        raise UserError(f"{path}: not an ONNX model (no ir_version; truncated or corrupt file?)")
    if default_opset(model) is None:
        raise UserError(
            f"{path}: no opset import for the default ONNX domain "
            "(truncated or corrupt file?)"
        )
    g = model.graph
    if len(g.output) == 0:
        raise UserError(f"{path}: the graph has no outputs (truncated or corrupt file?)")


def default_opset(model: ModelProto) -> int | None:
    for imp in model.opset_import:
        if imp.domain in DEFAULT_DOMAINS:
            return int(imp.version)
    return None


def _uses_external_data(model: ModelProto) -> bool:
    from onnx.external_data_helper import uses_external_data

    for t in model.graph.initializer:
        if uses_external_data(t):
            return True
    for n in model.graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and uses_external_data(a.t):
                return True
    return False


def _load_external(model: ModelProto, path: str) -> None:
    from onnx.external_data_helper import load_external_data_for_model

    base = os.path.dirname(os.path.abspath(path))
    try:
        load_external_data_for_model(model, base)
    except FileNotFoundError as e:
        raise UserError(
            f"{path}: external data file not found: {e.filename or e}"
        ) from None
    except Exception as e:  # noqa: BLE001 - onnx raises a variety of errors here
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UserError(f"{path}: cannot load external tensor data: {msg}") from None
