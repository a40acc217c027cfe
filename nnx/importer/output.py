"""Stream an imported module as IR text chunks (no 200 MB string for ResNet-50).

`nnx.ir_io.module_to_text` joins the op text and the whole resource section into
one string; for a large model that doubles peak memory and costs a copy. Here the
op text and each blob are separate chunks for `write_text_atomically`, in the same
format (`{-# dialect_resources: { builtin: { handle: "0x<align><hex>" } } #-}`).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator

import numpy as np
from xdsl.dialects.builtin import DenseResourceAttr
from xdsl.ir import Operation
from xdsl.printer import Printer

from nnx import resources

CHUNK_BYTES = 1 << 21
"""Blob bytes hex-encoded per chunk: small strings are reused by the allocator, so a
100 MB model costs no 200 MB string (and its page faults)."""


def module_chunks(
    module: Operation, generic: bool = False, debuginfo: bool = True
) -> Iterator[str]:
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic, print_debuginfo=debuginfo).print_op(
        module
    )
    out.write("\n")
    text = out.getvalue()
    yield text
    handles = [h for h in resources.used_handles(text) if resources.has_blob(h)]
    if not handles:
        return
    arrays = _blob_arrays(module)
    yield "\n{-#\n  dialect_resources: {\n    builtin: {\n"
    for i, h in enumerate(handles):
        sep = "," if i + 1 < len(handles) else ""
        yield f'      {h}: "'
        arr = arrays.get(h)
        if arr is None:
            yield resources.blob_hex(h)
        else:
            yield from _hex_chunks(arr)
        yield f'"{sep}\n'
    yield "    }\n  }\n#-}\n"


def _blob_arrays(module: Operation) -> dict[str, np.ndarray]:
    """handle -> numpy array of every dense_resource value of a graph.constant."""
    out: dict[str, np.ndarray] = {}
    for op in module.walk():
        value = op.properties.get("value")
        if isinstance(value, DenseResourceAttr):
            h = resources.handle_of(value)
            if h not in out:
                out[h] = resources.lookup_array(value)
    return out


def _hex_chunks(arr: np.ndarray) -> Iterator[str]:
    """MLIR's blob text: '0x', the 4-byte alignment, the bytes (as resources.blob_hex)."""
    align = max(arr.dtype.itemsize, 1)
    yield "0x" + struct.pack("<I", align).hex()
    data = np.ascontiguousarray(arr)
    view = memoryview(data.reshape(-1).view(np.uint8)) if data.size else memoryview(b"")
    for start in range(0, len(view), CHUNK_BYTES):
        yield view[start : start + CHUNK_BYTES].hex()
