"""A minimal PNG encoder (8-bit RGB, no dependencies beyond numpy and zlib), for the
pictures tools draw when matplotlib is not installed."""

from __future__ import annotations

import struct
import zlib

import numpy as np


def png_bytes(img: np.ndarray) -> bytes:
    """The PNG file of an (height, width, 3) uint8 RGB image."""
    img = np.ascontiguousarray(img, dtype=np.uint8)
    h, w, _ = img.shape
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def write_png(path: str, img: np.ndarray) -> None:
    """Write `img` ((height, width, 3) uint8 RGB) as a PNG file at `path`."""
    with open(path, "wb") as f:
        f.write(png_bytes(img))
