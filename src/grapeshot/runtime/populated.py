"""Large fresh buffers whose pages are mapped when they are made, not one fault at a time.

A fresh buffer of a few megabytes (the blocks a rebalance moves, sent and received) is new
memory, mapped on first touch. numpy asks huge pages for its large arrays, and on a virtual
machine each huge page's fault (a 2 MiB page zeroed, memory compacted) is slow: measured
here, 38 MiB zeroed by numpy took 110-180 ms, and 21-25 ms mapped at once in 4 KiB pages
(``mmap`` with ``MAP_POPULATE``). Only for buffers that are written once and read once:
kernels run on huge pages faster (an arena on these pages cost a rank 20% more busy time),
so the arena and the blocks stay numpy's. Below :data:`POPULATE_BYTES` (numpy's allocator
reuses freed memory there) or where the platform has no ``MAP_POPULATE``, the buffers are
numpy's own.
"""

from __future__ import annotations

import mmap

import numpy as np

#: Arrays smaller than this come from numpy's allocator, bytes: a rebalance moving a few
#: partitions (0.3-0.5 MB at 16×16 on the front) got each buffer in 9 µs from it and in
#: 80 µs mapped anew.
POPULATE_BYTES = 1 << 20


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
