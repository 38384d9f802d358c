"""Large fresh arrays whose pages are mapped when they are made, not one fault at a time.

A fresh array of a few megabytes (an arena rebuilt at a rebalance, the blocks a rebalance
moves) is new memory: the kernel maps each of its 4 KiB pages on first touch, one fault
each. On a virtual machine a fault is expensive: measured here, 38 MiB zeroed by numpy took
46-173 ms, and 19-25 ms mapped at once (``mmap`` with ``MAP_POPULATE``) and zeroed; a
rebalance's rebuilt arena of 3 MB took 13 ms. Below :data:`POPULATE_BYTES` (numpy's
allocator reuses freed memory there) or where the platform has no ``MAP_POPULATE``, the
arrays are numpy's own.
"""

from __future__ import annotations

import mmap

import numpy as np

#: Arrays smaller than this come from numpy's allocator, bytes.
POPULATE_BYTES = 1 << 18


def zeros(count: int, dtype: np.dtype | type = np.float64) -> np.ndarray:
    """A 1-D array of ``count`` zeros of ``dtype``, its pages mapped at once if it is large.

    The memory is anonymous (zero-filled by the kernel) and lives as long as the array (and
    its views) do.
    """
    dtype = np.dtype(dtype)
    nbytes = int(count) * dtype.itemsize
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if nbytes < POPULATE_BYTES or not populate:
        return np.zeros(count, dtype=dtype)
    region = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    return np.frombuffer(region, dtype=dtype, count=count)
