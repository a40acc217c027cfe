"""Weights as `dense_resource` blobs, stored as numpy arrays, with a fast text path.

MLIR keeps large constants out of the op text: an op refers to
`dense_resource<handle> : tensor<...>` and the file ends with a
`{-# dialect_resources: { builtin: { handle: "0x<alignment><hex bytes>" } } #-}`
section. xDSL can parse and print that section, but its lexer decodes ~4 MB/s; a
100 MB model would take half a minute. This module keeps every blob as a numpy array
in one process-wide store and reads/writes the resource section itself:

* `split_resource_section(text)` cuts the trailing `{-# ... #-}` section off a file's
  text, decodes every builtin blob with `bytes.fromhex` into the store, and returns the
  IR text for xDSL's parser (the handles in the IR then resolve through the store);
* `format_resource_section(handles)` renders the section for the handles a printed
  module uses.

MLIR's blob encoding is a 4-byte little-endian alignment followed by the raw bytes.
The raw bytes are numpy's C-order layout of the element type (nnx/types.py): one
element per byte for i1 and for the sub-byte types (i4/ui4/i2/ui2, f4E2M1FN,
f6E2M3FN/f6E3M2FN), the value in the low bits and the high bits zero, as MLIR
stores dense elements (every width above 1 bit rounded up to whole bytes). Sub-byte
blobs are not packed two or four to a byte; a reader of i4/i2 blobs masks the low
bits, so sign-extended bytes (0xFF for i4 -1) read the same.
"""

from __future__ import annotations

import binascii
import mmap
import os
import re
import struct
from collections.abc import Iterable, Iterator
from typing import IO

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    StringAttr,
    TensorType,
)

from nnx.types import is_narrow, is_narrow_int, numpy_dtype_of, tensor_type_of

_store: dict[str, np.ndarray] = {}
_raw: dict[str, bytes | memoryview] = {}
_external: dict[str, tuple[str, int, int]] = {}
"""handle -> (absolute path of a weights file, byte offset, byte count): blobs that
live in an external weights file (see `EXTERNAL_KEY`), mapped on first use."""

EXTERNAL_KEY = "nnx_weights"
"""The `external_resources` group naming blobs in a raw weights file:
`{-# external_resources: { nnx_weights: { handle: "FILE:OFFSET:NBYTES", ... } } #-}`;
FILE is relative to the directory of the IR file. MLIR tools keep unknown external
resource groups as they are, so such IR still passes through mlir-opt."""

WEIGHTS_ALIGN = 64
_counter = 0

_HANDLE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.$-]*")


class ResourceError(ValueError):
    """A malformed or missing resource blob."""


def _fresh_handle(hint: str) -> str:
    global _counter
    base = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "blob"
    if not base[0].isalpha() and base[0] != "_":
        base = "w_" + base
    while True:
        _counter += 1
        handle = f"{base}_{_counter}" if hint else f"blob_{_counter}"
        if not has_blob(handle):
            return handle


def register_array(array: np.ndarray, hint: str = "") -> DenseResourceAttr:
    """Store `array` under a fresh handle and return the attribute referring to it."""
    array = np.asarray(array)
    if not array.flags.c_contiguous:
        array = array.copy(order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)
    handle = _fresh_handle(hint)
    _store[handle] = array
    return DenseResourceAttr.from_params(handle, tensor_type_of(array))


def has_blob(handle: str) -> bool:
    return handle in _store or handle in _raw or handle in _external


def _external_bytes(handle: str) -> memoryview:
    path, offset, nbytes = _external[handle]
    if nbytes == 0:
        return memoryview(b"")
    try:
        mm = np.memmap(path, dtype=np.uint8, mode="r", offset=offset, shape=(nbytes,))
    except (OSError, ValueError) as e:
        raise ResourceError(f"dense_resource<{handle}>: cannot map {path}: {e}") from None
    return memoryview(mm)


def lookup_array(attr: DenseResourceAttr) -> np.ndarray:
    """The numpy value of a dense_resource attribute (read-only view)."""
    handle = attr.resource_handle.data
    arr = _store.get(handle)
    ttype = attr.type
    assert isinstance(ttype, TensorType)
    if arr is None:
        raw = _raw.pop(handle, None)
        if raw is None and handle in _external:
            raw = _external_bytes(handle)  # a read-only memory map: no copy, no decode
        if raw is None:
            raise ResourceError(f"dense_resource<{handle}> has no blob in the file")
        dtype = numpy_dtype_of(ttype.element_type)
        shape = tuple(ttype.get_shape())
        expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if len(raw) != expected:
            raise ResourceError(
                f"dense_resource<{handle}>: blob has {len(raw)} bytes, "
                f"{ttype} needs {expected}"
            )
        arr = np.frombuffer(raw, dtype=dtype).reshape(shape)
        if is_narrow_int(dtype):  # canonical bytes: value in the low bits, rest 0
            arr = arr.astype(np.int8).astype(dtype)
        _store[handle] = arr
    return arr


def elements_value(attr: DenseResourceAttr | DenseIntOrFPElementsAttr) -> np.ndarray:
    """The numpy value of a dense or dense_resource elements attribute."""
    if isinstance(attr, DenseResourceAttr):
        return lookup_array(attr)
    ttype = attr.get_type()
    assert isinstance(ttype, TensorType)
    dtype = numpy_dtype_of(ttype.element_type)
    shape = tuple(ttype.get_shape())
    if is_narrow(dtype):
        # bf16/f8/f6/f4/i4/i2: straight from xDSL's bytes (one element per byte for
        # the sub-byte types, as in MLIR; a parsed i4 -1 may be 0xFF, re-encoded 0x0F)
        arr = np.frombuffer(attr.data.data, dtype=dtype)
        if is_narrow_int(dtype):
            arr = arr.astype(np.int8).astype(dtype)
        n = int(np.prod(shape, dtype=np.int64))
        if arr.size == 1 and n != 1:
            return np.full(shape, arr.reshape(()), dtype=dtype)
        return arr.reshape(shape)
    data = attr.get_values()
    arr = np.asarray(data, dtype=dtype)
    if arr.size == 1 and int(np.prod(shape, dtype=np.int64)) != 1:
        arr = np.full(shape, arr.reshape(()), dtype=dtype)
    return arr.reshape(shape)


_ENTRY_RE = re.compile(rb'\s*,?\s*([A-Za-z_][A-Za-z0-9_.$-]*|"[^"\n]*")\s*:\s*"')
_BUILTIN_RE = re.compile(rb"\bbuiltin\s*:\s*\{")
_EXTERNAL_RE = re.compile(rb"\b" + EXTERNAL_KEY.encode() + rb"\s*:\s*\{")


def _read_external_entries(data, pos: int, end: int, base_dir: str | None) -> int:
    """Record the `handle: "FILE:OFFSET:NBYTES"` entries of the nnx_weights group."""
    count = 0
    sizes: dict[str, int] = {}
    while True:
        km = _ENTRY_RE.match(data, pos, end)
        if km is None:
            if bytes(data[pos:end]).lstrip(b" \t\r\n,").startswith(b"}"):
                return count
            raise ResourceError(f"{EXTERNAL_KEY}: expected 'name: \"FILE:OFFSET:NBYTES\"'")
        key = km.group(1).decode("utf-8").strip('"')
        close = data.find(b'"', km.end(), end)
        if close < 0:
            raise ResourceError(f"{EXTERNAL_KEY} '{key}': unterminated string")
        value = bytes(data[km.end() : close]).decode("utf-8", "replace")
        file, _, rest = value.rpartition(":")
        file, _, off = file.rpartition(":")
        try:
            offset, nbytes = int(off), int(rest)
        except ValueError:
            offset = nbytes = -1
        if not file or offset < 0 or nbytes < 0:
            raise ResourceError(
                f"{EXTERNAL_KEY} '{key}': expected \"FILE:OFFSET:NBYTES\", got \"{value}\""
            )
        path = os.path.normpath(os.path.join(base_dir or os.getcwd(), file))
        if path not in sizes:
            try:
                sizes[path] = os.path.getsize(path)
            except OSError as e:
                raise ResourceError(
                    f"{EXTERNAL_KEY} '{key}': cannot open weights file {file}: {e.strerror}"
                ) from None
        if offset + nbytes > sizes[path]:
            raise ResourceError(
                f"{EXTERNAL_KEY} '{key}': bytes {offset}..{offset + nbytes} lie beyond the "
                f"end of {file} ({sizes[path]} bytes)"
            )
        _external[key] = (path, offset, nbytes)
        _store.pop(key, None)
        _raw.pop(key, None)
        count += 1
        pos = close + 1


def _section_start(data: bytes) -> int:
    """Offset of the first `{-#` that is not inside a `//` comment, or -1.

    Searched forwards: the section comes last and is mostly hex, so the IR before it
    is short while a backward search would scan all the blobs."""
    pos = 0
    while True:
        pos = data.find(b"{-#", pos)
        if pos < 0:
            return -1
        line_start = data.rfind(b"\n", 0, pos) + 1
        if b"//" not in data[line_start:pos]:
            return pos
        pos += 3


def split_resource_section(
    data: bytes | str | mmap.mmap, base_dir: str | None = None
) -> tuple[str, int]:
    """Cut the trailing `{-# dialect_resources: {builtin: {...}} #-}` section off a
    file's contents and load its builtin blobs into the store.

    Works on the raw bytes: the hex text of the blobs is never decoded into a Python
    string (for BERT-base that alone saves seconds); `binascii.unhexlify` reads each
    blob straight from the buffer. Returns the IR text, with the section replaced by as
    many newlines so line numbers stay right, and the number of blobs read.

    Blobs in an external weights file (`external_resources: { nnx_weights: ... }`) are
    recorded, not read: `lookup_array` maps them when first used. Their file names are
    relative to `base_dir` (the IR file's directory; the working directory if None).
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    start = _section_start(data)
    if start < 0:
        return data.decode("utf-8"), 0
    end = data.rfind(b"#-}", start)
    if end < 0:
        raise ResourceError("unterminated '{-#' resource section")
    view = memoryview(data)
    count = 0
    newlines = 0
    ext = _EXTERNAL_RE.search(data, start, end)
    if ext is not None:
        count += _read_external_entries(data, ext.end(), end, base_dir)
    m = _BUILTIN_RE.search(data, start, end)
    if m is None:
        newlines = data[start : end + 3].count(b"\n")
    else:
        newlines += data[start : m.end()].count(b"\n")
        pos = m.end()
        while True:
            km = _ENTRY_RE.match(data, pos, end)
            if km is None:
                rest = data[pos:end].lstrip(b" \t\r\n,")
                if rest.startswith(b"}"):
                    break
                near = rest[:30].decode("utf-8", "replace")
                raise ResourceError(f"resource section: expected 'name: \"0x...\"' near {near!r}")
            newlines += data[pos : km.end()].count(b"\n")
            key = km.group(1).decode("utf-8").strip('"')
            quote = km.end() - 1
            close = data.find(b'"', quote + 1, end)
            if close < 0:
                raise ResourceError(f"resource '{key}': unterminated blob string")
            if data[quote + 1 : quote + 3] != b"0x" or close - quote - 1 < 10:
                raise ResourceError(f"resource '{key}': blob must be a hex string '0x...'")
            try:
                align = int.from_bytes(binascii.unhexlify(view[quote + 3 : quote + 11]), "little")
            except (binascii.Error, ValueError):
                align = 0
            if align == 0 or align & (align - 1):
                raise ResourceError(
                    f"resource '{key}': blob must start with a 4-byte power-of-two alignment"
                )
            try:
                raw = binascii.unhexlify(view[quote + 11 : close])  # skip 0x + alignment
            except (binascii.Error, ValueError) as e:
                raise ResourceError(f"resource '{key}': {e}") from None
            _raw[key] = raw
            _store.pop(key, None)
            count += 1
            pos = close + 1
        newlines += data[pos : end + 3].count(b"\n")
    text = data[:start].decode("utf-8") + "\n" * newlines + data[end + 3 :].decode("utf-8")
    return text, count


def used_handles(module_text: str) -> list[str]:
    """Handles referenced as dense_resource<...> in printed IR text, in order."""
    seen: dict[str, None] = {}
    for m in re.finditer(r"dense_resource<([^>]+)>", module_text):
        seen.setdefault(m.group(1), None)
    return list(seen)


def blob_bytes(handle: str) -> tuple[memoryview, int]:
    """The raw bytes of a blob and their alignment (element size)."""
    arr = _store.get(handle)
    if arr is not None:
        data = np.ascontiguousarray(arr).reshape(-1) if arr.ndim else arr.reshape(1)
        return memoryview(data.view(np.uint8)), max(arr.dtype.itemsize, 1)
    if handle in _raw:
        return memoryview(_raw[handle]), 4
    return _external_bytes(handle), 4


def blob_nbytes(handle: str) -> int:
    if handle in _store:
        return int(_store[handle].nbytes)
    if handle in _raw:
        return len(_raw[handle])
    return _external[handle][2] if handle in _external else 0


def module_handles(op) -> list[str]:
    """Handles of the dense_resource values that `op` and the ops inside it use."""
    seen: dict[str, None] = {}
    for o in op.walk():
        for a in (*o.properties.values(), *o.attributes.values()):
            if isinstance(a, DenseResourceAttr):
                seen.setdefault(handle_of(a), None)
    return list(seen)


def blob_hex(handle: str) -> str:
    data, align = blob_bytes(handle)
    return "0x" + struct.pack("<I", align).hex() + data.hex()


HEX_CHUNK_BYTES = 1 << 21
"""Blob bytes hex-encoded per text chunk: a 100 MB model costs no 200 MB string."""


def resource_section_chunks(
    handles: Iterable[str],
    ir_dir: str | None = None,
    weights: tuple[IO[bytes], str] | None = None,
) -> Iterator[str]:
    """The `{-# ... #-}` section for `handles`, as text chunks ('' if none stored).

    * `weights=(file, path)`: every blob is appended to the open binary `file` (at
      64-byte aligned offsets) and referred to from an `external_resources` group;
      `path` is how the IR names the file (relative to `ir_dir`).
    * otherwise blobs that came from an external weights file stay references to it
      (relative to `ir_dir`, or absolute when `ir_dir` is None), and the others are
      written inline as MLIR hex blobs in `dialect_resources`.
    """
    entries = [h for h in handles if has_blob(h)]
    if not entries:
        return
    external: list[tuple[str, str]] = []
    inline: list[str] = []
    if weights is not None:
        f, name = weights
        for h in entries:
            data, _ = blob_bytes(h)
            pos = f.tell()
            pad = -pos % WEIGHTS_ALIGN
            if pad:
                f.write(b"\0" * pad)
                pos += pad
            f.write(data)
            external.append((h, f"{name}:{pos}:{len(data)}"))
    else:
        for h in entries:
            if h in _external and h not in _store:
                path, offset, nbytes = _external[h]
                ref = os.path.relpath(path, ir_dir) if ir_dir is not None else path
                external.append((h, f"{ref}:{offset}:{nbytes}"))
            else:
                inline.append(h)
    yield "\n{-#\n"
    if external:
        yield f"  external_resources: {{\n    {EXTERNAL_KEY}: {{\n"
        for i, (h, ref) in enumerate(external):
            sep = "," if i + 1 < len(external) else ""
            yield f'      {h}: "{ref}"{sep}\n'
        yield "    }\n  }" + (",\n" if inline else "\n")
    if inline:
        yield "  dialect_resources: {\n    builtin: {\n"
        for i, h in enumerate(inline):
            data, align = blob_bytes(h)
            yield f'      {h}: "0x' + struct.pack("<I", align).hex()
            for k in range(0, len(data), HEX_CHUNK_BYTES):
                yield data[k : k + HEX_CHUNK_BYTES].hex()
            yield '"' + ("," if i + 1 < len(inline) else "") + "\n"
        yield "    }\n  }\n"
    yield "#-}\n"


def format_resource_section(handles: Iterable[str], ir_dir: str | None = None) -> str:
    """The whole section as one string (see `resource_section_chunks`)."""
    return "".join(resource_section_chunks(handles, ir_dir))


def handle_of(attr: DenseResourceAttr) -> str:
    h = attr.resource_handle
    assert isinstance(h, StringAttr)
    return h.data


def _bind_xdsl_resource_interface() -> None:
    """Make xDSL's builtin resource interface read and write this store.

    xDSL's default interface renames a handle it has seen before (so parsing the same
    text twice in one process changes `w` into `w_0`) and keeps blobs as hex strings.
    Binding it here keeps handles stable and lets xDSL's own printer and parser (e.g.
    `print_metadata`) see the same blobs as the fast path above.
    """
    from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
    from xdsl.dialects.builtin import Builtin

    iface = Builtin.get_interface(OpAsmDialectInterface)
    if iface is None:  # pragma: no cover - xDSL always has it
        return

    def declare_resource(key: str) -> str:
        return key

    def parse_resource(key: str, val: str) -> None:
        if not val.startswith("0x") or len(val) < 10:
            raise ValueError(f"Blob must be a hex string, got: {val[:20]}")
        _raw[key] = bytes.fromhex(val[10:])
        _store.pop(key, None)

    def lookup(key: str) -> str | None:
        return blob_hex(key) if has_blob(key) else None

    def build_resources(keys: Iterable[str]) -> dict[str, str]:
        return {k: blob_hex(k) for k in keys if has_blob(k)}

    iface.declare_resource = declare_resource  # type: ignore[method-assign]
    iface.parse_resource = parse_resource  # type: ignore[method-assign]
    iface.lookup = lookup  # type: ignore[method-assign]
    iface.build_resources = build_resources  # type: ignore[method-assign]


_bind_xdsl_resource_interface()
