"""Decode a PNG (8-bit RGB or RGBA, not interlaced: what Chromium's --screenshot writes) into an array of RGB
pixels, with zlib and numpy only: the tests check what a browser drew without needing Pillow."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def read_rgb(path: Path) -> np.ndarray:
    """(height, width, 3) uint8."""
    data = Path(path).read_bytes()
    assert data[:8] == SIGNATURE, f"{path} is not a PNG"
    pos, idat = 8, []
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    assert depth == 8 and interlace == 0 and colour in (2, 6), "only 8-bit RGB/RGBA, not interlaced"
    bpp = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(height, width * bpp + 1)
    rows = np.zeros((height, width * bpp), dtype=np.uint8)
    prev = np.zeros(width * bpp, dtype=np.uint8)
    for y in range(height):
        rows[y] = prev = _unfilter(int(raw[y, 0]), raw[y, 1:], prev, bpp, width)
    return rows.reshape(height, width, bpp)[:, :, :3]


def _unfilter(kind: int, line: np.ndarray, up: np.ndarray, bpp: int, width: int) -> np.ndarray:
    if kind == 0:  # None
        return line.copy()
    if kind == 1:  # Sub: a running sum along the row, per channel (uint8 wraps as PNG wants)
        return np.cumsum(line.reshape(width, bpp), axis=0, dtype=np.uint8).reshape(-1)
    if kind == 2:  # Up
        return line + up
    # Average and Paeth depend on the byte just decoded to the left: one byte at a time.
    row, above = bytearray(line.tobytes()), up.tobytes()
    for i in range(len(row)):
        a = row[i - bpp] if i >= bpp else 0
        b = above[i]
        if kind == 3:
            row[i] = (row[i] + ((a + b) >> 1)) & 255
            continue
        c = above[i - bpp] if i >= bpp else 0
        p = a + b - c
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    return np.frombuffer(bytes(row), dtype=np.uint8)
