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

:func:`make_program` makes it a runnable :class:`~grapeshot.model.program.Program`
(:class:`CommBenchProgram`): every step each chare sends its two chunks of real
bytes through a graph exchange, checks and folds what it received, and computes a little.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse as sp
from numba import njit

from grapeshot.model.errors import InputError, check_int, check_number
from grapeshot.model.program import (
    Block,
    Box,
    Context,
    GraphExchange,
    Phase,
    Program,
    SimulationError,
)
from grapeshot.model.seed import SeedLike, as_generator
from grapeshot.model.workload import HaloGraph, Workload, check_grid

CHUNK_BYTES = 1 << 20
"""Default chunk size: 1 MiB (the paper's "1 MB per message")."""
SMALL_CHUNK_BYTES = 1 << 16
"""Chunk size of the ``small`` scene: 64 KiB (quick real runs on a laptop)."""
SPREAD = 0.5
"""Default relative half-width of the chunk sizes (sizes in ``[0.5, 1.5) × CHUNK_BYTES``)."""
COMPUTE = 1e-3
"""Default compute time per chare per step, s."""
FANOUT = 2
"""Messages each chare sends per step."""

SCENES: dict[str, str] = {
    "default": "chunks of 1 MiB ± 50 % (uniform) to two random chares, 1 ms compute per step",
    "uniform-sizes": "chunks of exactly 1 MiB to two random chares, 1 ms compute per step",
    "small": "chunks of 64 KiB ± 50 % (uniform) to two random chares, 1 ms compute per step",
}

_SCENE_SPREAD = {"default": SPREAD, "uniform-sizes": 0.0, "small": SPREAD}
_SCENE_CHUNK = {"default": CHUNK_BYTES, "uniform-sizes": CHUNK_BYTES, "small": SMALL_CHUNK_BYTES}


def _check_spread(spread: float) -> float:
    return check_number(spread, "spread", low=0, high=1, high_open=True)


def _draw(
    n_chares: int, chunk_bytes: int, spread: float, seed: SeedLike
) -> tuple[np.ndarray, np.ndarray]:
    """Destinations ``(n, 2)`` and chunk sizes ``(n,)`` (bytes), both int64."""
    n = check_int(n_chares, "n_chares", minimum=FANOUT + 1)
    chunk = check_int(chunk_bytes, "chunk_bytes")
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


def _check_scene_and_parts(scene: str, parts: Sequence[int]) -> tuple[int, ...]:
    """The partition grid as a tuple, after checking the scene and the grid."""
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
    parts_t = tuple(check_int(p, "parts") for p in parts_t)
    return parts_t


def make_trace(
    scene: str,
    parts: Sequence[int],
    steps: int,
    *,
    cells: int | Sequence[int] | None = None,
    seed: SeedLike = 0,
    progress: Callable[[int, int], None] | None = None,
    chunk_bytes: int | None = None,
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
        Mean chunk size in bytes (default: the scene's, 1 MiB or 64 KiB for ``small``).
    compute
        Compute seconds per chare per step, >= 0.

    Returns
    -------
    Workload
        ``cost`` (steps, P) all ``compute`` seconds; the halo graph is
        :func:`commbench_matrix`'s (bytes per step); ``work`` is ``None``.
    """
    parts_t = _check_scene_and_parts(scene, parts)
    n_steps = check_int(steps, "steps")
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
    chunk = _SCENE_CHUNK[scene] if chunk_bytes is None else chunk_bytes
    m = commbench_matrix(n, chunk_bytes=chunk, spread=_SCENE_SPREAD[scene], seed=seed)
    halo = HaloGraph(m.indptr.astype(np.int64), m.indices.astype(np.int64), m.data.astype(np.int64))
    cost = np.full((n_steps, n), seconds)
    if progress is not None:
        for s in range(n_steps):  # the cost is analytic: every step is done at once
            progress(s + 1, n_steps)
    return Workload(shape, parts_t, cost, halo, "s", None, "commbench", scene)


def make_program(
    scene: str,
    parts: Sequence[int],
    *,
    cells: int | Sequence[int] | None = None,
    seed: SeedLike = 0,
):
    """CommBench as a runnable program: chares that send the trace's messages, real bytes.

    Parameters
    ----------
    scene
        A key of :data:`SCENES` (chunk size and spread).
    parts
        Partitions (chares) per axis, 2 or 3 values, ``prod(parts) >= 3``.
    cells
        Cells per axis (an integer or one per axis; default 8 per chare per axis): each chare
        computes on its cells every step.
    seed
        Seed of the destinations and sizes (the same draw as :func:`make_trace`).

    Returns
    -------
    CommBenchProgram
    """
    parts_t = _check_scene_and_parts(scene, parts)
    if cells is None:
        shape = tuple(8 * p for p in parts_t)
    elif isinstance(cells, int | np.integer) and not isinstance(cells, bool):
        shape = (int(cells),) * len(parts_t)
    else:
        try:
            shape = tuple(int(c) for c in cells)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise InputError("cells", f"got {cells!r}", "an integer or one per axis") from None
    check_grid(shape, parts_t, "parts")
    n = math.prod(parts_t)
    if n < FANOUT + 1:
        raise InputError("parts", f"gives {n} chares", f"at least {FANOUT + 1}")
    dest, sizes = _draw(n, _SCENE_CHUNK[scene], _SCENE_SPREAD[scene], seed)
    return CommBenchProgram(scene, shape, parts_t, dest, sizes)


# --- the runnable program -------------------------------------------------------------------

#: Bytes at the head of every chunk: the sender's ``mix`` word (its state travels).
_HEAD = 8


@njit(cache=True, nogil=True)
def _fill(buf, sender, step, mix):
    """Write a chunk: the sender's mix word, then bytes that depend on (sender, step, index)."""
    head = buf[:_HEAD].view(np.uint64)
    head[0] = mix
    base = np.uint64(sender) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(step) * np.uint64(
        0xBF58476D1CE4E5B9
    )
    for k in range(_HEAD, buf.size):
        x = base + np.uint64(k) * np.uint64(0x94D049BB133111EB)
        buf[k] = np.uint8((x >> np.uint64(29)) & np.uint64(255))


@njit(cache=True, nogil=True)
def _fold(buf, sender, step, mix):
    """Check a chunk against its pattern and fold it into ``mix``; ``(new mix, bad bytes)``."""
    base = np.uint64(sender) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(step) * np.uint64(
        0xBF58476D1CE4E5B9
    )
    bad = 0
    total = np.uint64(0)
    for k in range(_HEAD, buf.size):
        x = base + np.uint64(k) * np.uint64(0x94D049BB133111EB)
        expect = np.uint8((x >> np.uint64(29)) & np.uint64(255))
        if buf[k] != expect:
            bad += 1
        total += np.uint64(buf[k])
    head = buf[:_HEAD].view(np.uint64)[0]
    # Order matters: a wrong arrival order changes the result (what the digest checks).
    mix = mix * np.uint64(6364136223846793005) + head + np.uint64(sender) + total
    return mix, bad


@njit(cache=True, nogil=True)
def _compute(acc, mix, sweeps):
    """A little arithmetic on every cell, driven by the folded ``mix``."""
    flat = acc.reshape(-1)
    drive = float(mix % np.uint64(1 << 20)) * 1e-6
    for _ in range(sweeps):
        for i in range(flat.size):
            flat[i] = 0.5 * flat[i] + np.sin(flat[i] + drive + i * 1e-3)


class CommBenchProgram(Program):
    """CommBench's chares as a program: one chare per partition, messages as a graph exchange.

    Every step, in its single phase ``"commbench"``:

    1. chare ``i`` sends ``s_i`` real bytes to each of its two destinations (the draw of
       :func:`make_trace`, fixed for the run): the first 8 bytes are its ``mix`` word (its
       state), the others a pattern of (sender, step, byte index);
    2. each chare checks every chunk it received against the pattern (a corrupted or misrouted
       chunk stops the run with a :class:`SimulationError`) and folds it into ``mix``, in
       sender order;
    3. it computes: ``sweeps`` passes of a little arithmetic over its cells driven by ``mix``.

    The block: ``acc`` (float64, the box's cells), ``mix`` (uint64 ``(1,)``), ``step`` (int64
    ``(1,)``). The output fields are ``acc`` and ``mix`` (as int64, on every cell), so the
    digest is equal across executors and placements only if every byte arrived, in order.
    The work count is the chare's cells (compute is even; the point is the communication).
    """

    name = "commbench"
    ghost = 0

    def __init__(
        self,
        scene: str,
        domain_shape: tuple[int, ...],
        parts_shape: tuple[int, ...],
        dest: np.ndarray,
        sizes: np.ndarray,
        sweeps: int = 4,
    ) -> None:
        self.scene = scene
        self.domain_shape = tuple(domain_shape)
        self.parts_shape = tuple(parts_shape)
        #: int64 ``(P, 2)`` destinations and ``(P,)`` chunk bytes (at least the 8-byte head).
        self.dest = np.asarray(dest, dtype=np.int64)
        self.sizes = np.maximum(np.asarray(sizes, dtype=np.int64), _HEAD)
        self.sweeps = int(sweeps)
        graph = GraphExchange(self._targets, self._pack, self._unpack, self._nbytes)
        self.phases = (Phase("commbench", self._kernel, graph=graph),)

    # -- the graph exchange ---------------------------------------------------------------

    def _targets(self, box: Box) -> tuple[int, ...]:
        return tuple(self.dest[box.part].tolist())

    def _nbytes(self, box: Box) -> tuple[int, ...]:
        return (int(self.sizes[box.part]),) * FANOUT

    def _pack(self, block: Block, box: Box, j: int) -> np.ndarray:
        buf = np.empty(int(self.sizes[box.part]), dtype=np.uint8)
        _fill(buf, box.part, int(block["step"][0]), block["mix"][0])
        return buf

    def _unpack(self, block: Block, box: Box, arrived: list[tuple[int, np.ndarray]]) -> None:
        step = int(block["step"][0])
        mix = block["mix"][0]
        for src, buf in arrived:
            if buf.dtype != np.uint8 or buf.size != self.sizes[src]:
                raise SimulationError(
                    step, box.part, "commbench",
                    f"chunk from {src} has {buf.size} {buf.dtype} items, expected "
                    f"{int(self.sizes[src])} bytes",
                )  # fmt: skip
            mix, bad = _fold(buf, src, step, np.uint64(mix))  # numba returns a Python int
            if bad:
                raise SimulationError(
                    step, box.part, "commbench", f"chunk from {src}: {bad} bytes corrupted"
                )
        block["mix"][0] = mix

    # -- the kernel -----------------------------------------------------------------------

    def _kernel(self, block: Block, box: Box, ctx: Context) -> None:
        _compute(block["acc"], block["mix"][0], self.sweeps)
        block["step"][0] += 1

    # -- Program --------------------------------------------------------------------------

    def init_block(self, box: Box) -> Block:
        """``acc`` zero, ``mix`` the chare id, ``step`` 0."""
        return {
            "acc": np.zeros(box.shape),
            "mix": np.array([box.part], dtype=np.uint64),
            "step": np.zeros(1, dtype=np.int64),
        }

    def work(self, block: Block, box: Box) -> int:
        """The chare's cells."""
        return math.prod(box.shape)

    def output_fields(self, block: Block, box: Box) -> dict[str, np.ndarray]:
        """``acc`` and the chare's ``mix`` word (as int64) on each of its cells."""
        mix = block["mix"].view(np.int64)[0]
        return {"acc": block["acc"].copy(), "mix": np.full(box.shape, mix, dtype=np.int64)}

    def advance(self, ctx: Context) -> float:
        """One unit of time per step."""
        return 1.0
