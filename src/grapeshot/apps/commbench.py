"""CommBench (TreeMatchLB §5.3): irregular, communication-heavy chares.

The benchmark as the paper describes it: each chare sends a large chunk of data to two chares
chosen at random, and the data size is heterogeneous (1 MB per message in the runs of its
Figure 6). Here:

- There are ``n`` chares. Chare ``i`` draws two distinct destinations uniformly among the
  ``n − 1`` others (so ``n >= 3``), once: the message graph is fixed for the whole run, as a
  chare array's communication pattern is.
- Chare ``i`` sends one chunk of ``s_i`` bytes to each of its two destinations, with
  ``s_i = round(chunk_bytes · (1 + spread · U_i))``, ``U_i ~ Uniform[−1, 1)`` independent. The
  sizes are spread uniformly over ``chunk_bytes · [1 − spread, 1 + spread)`` with mean
  ``chunk_bytes``; ``spread = 0`` gives equal sizes.
- Each chare computes ``compute`` seconds per step (default 1 ms), the same for all: the
  benchmark stresses communication and placement, not compute balance.

The destinations come first from the generator (two integer draws per chare), then the sizes
(one float per chare), so ``spread`` does not change who talks to whom for a given seed.

:func:`commbench_matrix` is the one-exchange n × n byte matrix (row = sender), for the
communication-schedule code; :func:`make_trace` lays ``prod(parts)`` chares on the partition
grid (chare id = partition id, C order) so the workload keeps a valid geometry, with the
CommBench message graph as its halo graph instead of a stencil.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from grapeshot.model.errors import InputError, check_positive_int
from grapeshot.model.seed import SeedLike, as_generator
from grapeshot.model.workload import HaloGraph, Workload, check_grid

CHUNK_BYTES = 1 << 20
"""Default chunk size: 1 MiB (the paper's "1 MB per message")."""
SPREAD = 0.5
"""Default relative half-width of the chunk sizes (sizes in ``[0.5, 1.5) × CHUNK_BYTES``)."""
COMPUTE = 1e-3
"""Default compute time per chare per step, s."""
FANOUT = 2
"""Messages each chare sends per step."""

SCENES: dict[str, str] = {
    "default": "chunks of 1 MiB ± 50 % (uniform) to two random chares, 1 ms compute per step",
    "uniform-sizes": "chunks of exactly 1 MiB to two random chares, 1 ms compute per step",
}

_SCENE_SPREAD = {"default": SPREAD, "uniform-sizes": 0.0}


def _check_spread(spread: float) -> float:
    try:
        x = float(spread)
    except (TypeError, ValueError):
        raise InputError("spread", f"got {spread!r}", "a number in [0, 1)") from None
    if not 0.0 <= x < 1.0:
        raise InputError("spread", f"got {spread!r}", "a number in [0, 1)")
    return x


def _draw(
    n_chares: int, chunk_bytes: int, spread: float, seed: SeedLike
) -> tuple[np.ndarray, np.ndarray]:
    """Destinations ``(n, 2)`` and chunk sizes ``(n,)`` (bytes), both int64."""
    n = check_positive_int(n_chares, "n_chares", minimum=FANOUT + 1)
    chunk = check_positive_int(chunk_bytes, "chunk_bytes")
    spread = _check_spread(spread)
    rng = as_generator(seed)
    # Two distinct picks among the n - 1 others: a uniform in [0, n-1), b uniform among the
    # n - 2 values != a; then shift both past the sender's own id.
    a = rng.integers(0, n - 1, size=n)
    b = rng.integers(0, n - 2, size=n)
    b += b >= a
    own = np.arange(n)
    dest = np.stack([a + (a >= own), b + (b >= own)], axis=1).astype(np.int64)
    sizes = np.rint(chunk * (1.0 + spread * rng.uniform(-1.0, 1.0, size=n))).astype(np.int64)
    return dest, np.maximum(sizes, 1)


def commbench_matrix(
    n_chares: int,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    spread: float = SPREAD,
    seed: SeedLike = 0,
) -> sp.csr_matrix:
    """CommBench's message matrix for one exchange.

    Parameters
    ----------
    n_chares
        Number of chares ``n``, >= 3.
    chunk_bytes
        Mean chunk size in bytes, >= 1.
    spread
        Relative half-width of the uniform size distribution, in [0, 1).
    seed
        Seed of the destinations and sizes.

    Returns
    -------
    scipy.sparse.csr_matrix
        int64, shape ``(n, n)``: entry ``(i, j)`` is the bytes chare ``i`` sends to chare
        ``j`` per step. Each row has exactly two non-zeros, off the diagonal, both equal to
        ``s_i``; column indices are sorted.
    """
    dest, sizes = _draw(n_chares, chunk_bytes, spread, seed)
    n = len(sizes)
    order = np.sort(dest, axis=1)
    indptr = np.arange(0, FANOUT * n + 1, FANOUT, dtype=np.int64)
    data = np.repeat(sizes, FANOUT)
    return sp.csr_matrix((data, order.reshape(-1), indptr), shape=(n, n))


def make_trace(
    scene: str,
    parts: Sequence[int],
    steps: int,
    *,
    cells: int | Sequence[int] | None = None,
    seed: SeedLike = 0,
    progress: Callable[[int, int], None] | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    compute: float = COMPUTE,
) -> Workload:
    """CommBench as a workload: one chare per partition, the message graph as the halo.

    Parameters
    ----------
    scene
        A key of :data:`SCENES` (it sets the size spread).
    parts
        Partitions per axis, 2 or 3 values; ``prod(parts)`` chares (>= 3).
    steps
        Steps of the trace, >= 1.
    cells
        Cells per axis of the nominal domain (an integer or one per axis, >= the partitions on
        each axis); default one cell per chare. It only shapes the geometry.
    seed
        Seed of the destinations and sizes.
    progress
        Called as ``progress(done, steps)`` after each step.
    chunk_bytes
        Mean chunk size in bytes.
    compute
        Compute seconds per chare per step, >= 0.

    Returns
    -------
    Workload
        ``cost`` (steps, P) all ``compute`` seconds; the halo graph is
        :func:`commbench_matrix`'s (bytes per step); ``work`` is ``None``.
    """
    if scene not in SCENES:
        raise InputError(
            "scene", f"unknown CommBench scene {scene!r}", f"one of {', '.join(SCENES)}"
        )
    try:
        parts_t = tuple(parts)
    except TypeError:
        raise InputError("parts", f"got {parts!r}", "2 or 3 partition counts") from None
    if len(parts_t) not in (2, 3):
        raise InputError("parts", f"got {len(parts_t)} values", "2 or 3 partition counts")
    parts_t = tuple(check_positive_int(p, "parts") for p in parts_t)
    n_steps = check_positive_int(steps, "steps")
    if progress is not None and not callable(progress):
        raise InputError("progress", f"got {progress!r}", "a callable(done, total) or None")
    try:
        seconds = float(compute)
    except (TypeError, ValueError):
        raise InputError("compute", f"got {compute!r}", "seconds >= 0") from None
    if not (math.isfinite(seconds) and seconds >= 0.0):
        raise InputError("compute", f"got {compute!r}", "seconds >= 0")
    if cells is None:
        shape = parts_t
    elif isinstance(cells, int | np.integer) and not isinstance(cells, bool):
        shape = (int(cells),) * len(parts_t)
    else:
        try:
            shape = tuple(cells)  # type: ignore[arg-type]
        except TypeError:
            raise InputError("cells", f"got {cells!r}", "an integer or one per axis") from None
    check_grid(shape, parts_t, "parts")
    n = math.prod(parts_t)
    if n < FANOUT + 1:
        raise InputError("parts", f"gives {n} chares", f"at least {FANOUT + 1}")
    m = commbench_matrix(n, chunk_bytes=chunk_bytes, spread=_SCENE_SPREAD[scene], seed=seed)
    halo = HaloGraph(m.indptr.astype(np.int64), m.indices.astype(np.int64), m.data.astype(np.int64))
    cost = np.full((n_steps, n), seconds)
    if progress is not None:
        for s in range(n_steps):  # the cost is analytic: every step is done at once
            progress(s + 1, n_steps)
    return Workload(shape, parts_t, cost, halo, "s", None, "commbench", scene)
