"""Compiled halo copies over flat arenas: gather into a message, scatter from one, copy within.

One call moves every buffer of a message (or every halo between partitions of one rank), so
the runtime pays one dispatch per message, not one Python call per buffer.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.model.task_halos import unsigned


@njit(cache=True, nogil=True)
def gather(src: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = src[idx[i]]`` (``src`` flat, ``idx`` int64, ``out`` as long as ``idx``)."""
    for i in range(idx.size):
        out[i] = src[unsigned(idx[i])]


@njit(cache=True, nogil=True)
def scatter(values: np.ndarray, idx: np.ndarray, dst: np.ndarray) -> None:
    """``dst[idx[i]] = values[i]``."""
    for i in range(idx.size):
        dst[unsigned(idx[i])] = values[i]


@njit(cache=True, nogil=True)
def copy_within(flat: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
    """``flat[dst[i]] = flat[src[i]]`` (the two index sets never overlap: interior vs ghost)."""
    for i in range(src.size):
        flat[unsigned(dst[i])] = flat[unsigned(src[i])]
