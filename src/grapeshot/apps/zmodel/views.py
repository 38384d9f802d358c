"""Beatnik's ``.view`` files: three little-endian uint64 extents, then float64 values (C order).

Files are named ``{z|w}_{N}_{p|f}_r{rank}.{size}.view`` and hold one rank's node array
``(ni, nj, components)`` with Beatnik's halo (2 low; 2 or 3 high, as Cabana allocates
owned cells + 5 nodes per axis).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from grapeshot.model.atomic import atomic_path
from grapeshot.model.errors import InputError


def view_name(field: str, mesh: int, periodic: bool, rank: int, size: int) -> str:
    """``{z|w}_{N}_{p|f}_r{rank}.{size}.view``."""
    return f"{field}_{mesh}_{'p' if periodic else 'f'}_r{rank}.{size}.view"


def read_view(path: str | os.PathLike[str]) -> np.ndarray:
    """The array ``(d0, d1, d2)`` of a view file; InputError if truncated or malformed."""
    data = Path(path).read_bytes() if Path(path).exists() else None
    if data is None:
        raise InputError(str(path), "does not exist", "a Beatnik .view file")
    if len(data) < 24:
        raise InputError(str(path), f"has {len(data)} bytes", "a 24-byte header of 3 uint64")
    ext = np.frombuffer(data[:24], dtype="<u8")
    if np.any(ext > 1 << 20):
        raise InputError(str(path), f"header extents {ext.tolist()}", "extents <= 2^20")
    count = int(np.prod(ext))
    if len(data) != 24 + 8 * count:
        raise InputError(
            str(path),
            f"has {len(data) - 24} value bytes",
            f"{8 * count} for extents {ext.tolist()}",
        )
    return np.frombuffer(data[24:], dtype="<f8").reshape(tuple(int(e) for e in ext)).copy()


def write_view(path: str | os.PathLike[str], array: np.ndarray) -> None:
    """Write ``array`` (3-D, float64) as a view file, atomically."""
    a = np.ascontiguousarray(array, dtype="<f8")
    if a.ndim != 3:
        raise InputError(str(path), f"array has {a.ndim} dimensions", "3")
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(np.asarray(a.shape, dtype="<u8").tobytes())
            fh.write(a.tobytes())


def to_view_array(padded: np.ndarray, cells_local: tuple[int, int]) -> np.ndarray:
    """Our padded (c, ni+4, nj+4) array in Beatnik's layout (cells+5, cells+5, c).

    Where Cabana allocates a third high-side ghost layer we have none; it is written as 0.
    """
    c = padded.shape[0]
    out = np.zeros((cells_local[0] + 5, cells_local[1] + 5, c))
    a = np.moveaxis(padded, 0, -1)
    ni, nj = min(a.shape[0], out.shape[0]), min(a.shape[1], out.shape[1])
    out[:ni, :nj] = a[:ni, :nj]
    return out
