"""Workloads (traces): a partitioned structured domain, its halo graph and its cost over time.

Partition ids flatten the partition grid of shape ``parts_shape`` in C order (the last axis
varies fastest). Partition ``p`` owns the box of cells ``[lo_a, hi_a)`` on each axis ``a``,
where the bounds split ``domain_shape[a]`` cells as evenly as integers allow
(:func:`partition_bounds`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from grapeshot.model.errors import InputError

UNITS = ("s", "work")
#: What timed a trace's seconds (:attr:`Workload.clock`): the kernel thread's CPU time, the
#: wall clock, or not said ("": an imported trace, a generator, a file from before clocks).
TRACE_CLOCKS = ("cpu", "wall", "")
#: Most cells a domain may have (2**48): int64 halo bytes and partition bounds never wrap.
MAX_CELLS = 1 << 48


@dataclass(frozen=True, eq=False)
class HaloGraph:
    """Directed halo messages between partitions, one step's worth, in CSR form.

    Row ``p`` lists the partitions ``p`` sends to (``indices[indptr[p]:indptr[p+1]]``) and
    the bytes of each message (``nbytes[...]``, bytes per step).

    Parameters
    ----------
    indptr
        int64, shape ``(P + 1,)``.
    indices
        int64, shape ``(E,)``; destination partition of each message.
    nbytes
        int64, shape ``(E,)``; bytes per step of each message.
    """

    indptr: np.ndarray
    indices: np.ndarray
    nbytes: np.ndarray

    @property
    def n_parts(self) -> int:
        """Number of partitions (rows)."""
        return len(self.indptr) - 1

    @property
    def n_messages(self) -> int:
        """Number of directed messages per step."""
        return len(self.indices)

    def sources(self) -> np.ndarray:
        """Source partition of each message, shape ``(E,)``."""
        return np.repeat(np.arange(self.n_parts, dtype=np.int64), np.diff(self.indptr))

    def validate(self, n_parts: int, where: str = "halo") -> None:
        """Raise :class:`InputError` unless this is a well-formed CSR over ``n_parts``."""
        for name in ("indptr", "indices", "nbytes"):
            arr = getattr(self, name)
            if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
                raise InputError(
                    f"{where}/{name}", f"has dtype {arr.dtype} and {arr.ndim} dims", "1-D ints"
                )
        if len(self.indptr) != n_parts + 1:
            raise InputError(f"{where}/indptr", f"has {len(self.indptr)} entries", f"{n_parts + 1}")
        if self.indptr[0] != 0 or np.any(np.diff(self.indptr) < 0):
            raise InputError(f"{where}/indptr", "is not non-decreasing from 0", None)
        if self.indptr[-1] != len(self.indices) or len(self.indices) != len(self.nbytes):
            raise InputError(
                f"{where}/indices",
                f"has {len(self.indices)} entries, bytes {len(self.nbytes)}",
                f"indptr[-1] = {self.indptr[-1]} of each",
            )
        if len(self.indices) and (self.indices.min() < 0 or self.indices.max() >= n_parts):
            raise InputError(f"{where}/indices", "out of range", f"ids in [0, {n_parts})")
        if len(self.nbytes) and self.nbytes.min() < 0:
            raise InputError(f"{where}/bytes", "has negative entries", "bytes >= 0")


def partition_bounds(domain_shape: tuple[int, ...], parts_shape: tuple[int, ...]) -> list:
    """Cell bounds of the partitions on each axis.

    Returns
    -------
    list of int64 arrays
        ``bounds[a]`` has ``parts_shape[a] + 1`` entries; partition ``i`` on axis ``a`` owns
        cells ``bounds[a][i]:bounds[a][i+1]``.
    """
    return [
        (np.arange(k + 1, dtype=np.int64) * d) // k
        for d, k in zip(domain_shape, parts_shape, strict=True)
    ]


def check_grid(domain_shape: tuple[int, ...], parts_shape: tuple[int, ...], where: str) -> None:
    """Raise unless both shapes are 2-D or 3-D positive grids with at least a cell a part."""
    if len(parts_shape) not in (2, 3) or len(domain_shape) != len(parts_shape):
        raise InputError(
            where,
            f"got parts {tuple(parts_shape)} and domain {tuple(domain_shape)}",
            "2-D or 3-D shapes of equal length",
        )
    for d, k in zip(domain_shape, parts_shape, strict=True):
        if k < 1 or d < k:
            raise InputError(
                where,
                f"got {k} partitions over {d} cells on an axis",
                "at least one partition, and at least one cell per partition",
            )
    # Halo bytes (ghost cells x bytes a cell) and partition bounds (i * d) are int64: a grid
    # past these sizes would wrap them, and no grid that fits in memory comes near.
    if math.prod(domain_shape) > MAX_CELLS or any(
        d * k >= 1 << 62 for d, k in zip(domain_shape, parts_shape, strict=True)
    ):
        raise InputError(
            where, f"got {math.prod(domain_shape)} cells", f"at most {MAX_CELLS} (2**48) cells"
        )


def grid_halo(
    domain_shape: tuple[int, ...],
    parts_shape: tuple[int, ...],
    *,
    ghost: int = 1,
    cell_bytes: int = 8,
    corners: bool = True,
    periodic: bool | Sequence[bool] = False,
) -> HaloGraph:
    """The halo graph of a stencil code on a partitioned grid.

    Each partition sends each neighbour the cells of its ghost region: a face message
    carries ``ghost`` layers of the shared face, an edge or corner message (``corners=True``,
    as SPH and 9-/27-point stencils need) the ``ghost``-wide block of the shared edge or corner.

    Parameters
    ----------
    domain_shape, parts_shape
        Cells and partitions per axis.
    ghost
        Ghost layer width in cells.
    cell_bytes
        Bytes sent per ghost cell (all exchanged fields together).
    corners
        Include edge and corner neighbours, not only faces.
    periodic
        Wrap around every axis (``True``) or around those flagged (one flag per axis, as
        :attr:`grapeshot.model.program.Program.periodic`): the last partition's neighbour is
        the first. A partition that is its own neighbour sends nothing; two faces shared with
        one partition (two partitions along an axis) make one message carrying both.
    """
    check_grid(domain_shape, parts_shape, "grid")
    ndim = len(parts_shape)
    extents = [np.diff(b) for b in partition_bounds(domain_shape, parts_shape)]
    wraps = np.array(
        (bool(periodic),) * ndim if isinstance(periodic, bool | np.bool_) else
        (tuple(bool(f) for f in periodic) or (False,) * ndim)
    )  # fmt: skip
    if not wraps.any():
        return _grid_csr(parts_shape, extents, ghost, cell_bytes, corners)
    coords = np.indices(parts_shape).reshape(ndim, -1)
    n = coords.shape[1]
    src_all, dst_all, bytes_all = [], [], []
    for offset in itertools.product((-1, 0, 1), repeat=ndim):
        nonzero = sum(o != 0 for o in offset)
        if nonzero == 0 or (not corners and nonzero > 1):
            continue
        nb = coords + np.asarray(offset)[:, None]
        shape = np.asarray(parts_shape)[:, None]
        inside = np.all((nb >= 0) & (nb < shape) | wraps[:, None], axis=0)
        nb = np.where(wraps[:, None], nb % shape, nb)
        ok = inside & np.any(nb != coords, axis=0)
        src = np.flatnonzero(ok)
        dst = np.ravel_multi_index(tuple(nb[:, ok]), parts_shape)
        cells = np.ones(len(src), dtype=np.int64)
        for a in range(ndim):
            along = extents[a][coords[a, ok]]
            cells *= np.minimum(ghost, along) if offset[a] else along
        src_all.append(src)
        dst_all.append(dst)
        bytes_all.append(cells * cell_bytes)
    src = np.concatenate(src_all)
    dst = np.concatenate(dst_all)
    nbytes = np.concatenate(bytes_all)
    # One message per pair (with wrap, two offsets can reach the same partition).
    pair, inverse = np.unique(src * n + dst, return_inverse=True)
    total = np.bincount(inverse.reshape(-1), weights=nbytes, minlength=len(pair))
    src, dst = pair // n, pair % n
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return HaloGraph(indptr, dst.astype(np.int64), np.rint(total).astype(np.int64))


def _grid_csr(
    parts_shape: tuple[int, ...],
    extents: list[np.ndarray],
    ghost: int,
    cell_bytes: int,
    corners: bool,
) -> HaloGraph:
    """The halo graph of a grid without wrap, whose (source, destination) pairs are distinct:
    each row's messages in ``itertools.product`` order of the offsets, in which a neighbour's
    C-order id grows, so the CSR is the one sorting the pairs would give, without the sort."""
    shape3 = np.ones(3, dtype=np.int64)
    shape3[: len(parts_shape)] = parts_shape
    ext = [np.ascontiguousarray(e, dtype=np.int64) for e in extents]
    while len(ext) < 3:
        ext.append(np.ones(1, dtype=np.int64))
    from grapeshot.model.grid_rows import grid_rows  # numba: not for `trace import --help`

    n = math.prod(parts_shape)
    indptr = np.zeros(n + 1, dtype=np.int64)
    args = (shape3, ext[0], ext[1], ext[2], len(parts_shape), ghost, cell_bytes, corners)
    grid_rows(*args, indptr, np.empty(0, np.int64), np.empty(0, np.int64), False)
    indices = np.empty(int(indptr[-1]), dtype=np.int64)
    nbytes = np.empty(int(indptr[-1]), dtype=np.int64)
    grid_rows(*args, indptr, indices, nbytes, True)
    return HaloGraph(indptr, indices, nbytes)


@dataclass(frozen=True, eq=False)
class Workload:
    """A trace: cost per partition per step on a partitioned 2-D or 3-D domain.

    Parameters
    ----------
    domain_shape
        Cells per axis.
    parts_shape
        Partitions per axis; partition ids flatten this grid in C order.
    cost
        float64, shape ``(steps, P)``: cost of each partition in each step, in ``units``.
    halo
        Halo messages per step.
    units
        ``"s"`` (seconds) or ``"work"`` (work units, calibrated elsewhere).
    work
        Optional, shape ``(steps, P)``: the counts that drive the cost (particles, wet
        cells, band cells).
    app, scene
        What produced the trace.
    clock
        With ``units="s"``, what timed ``cost``: ``"cpu"`` (the kernel thread's CPU time,
        which leaves out the time another process held the core), ``"wall"``, or ``""``
        (not said).
    wall
        Optional, float64 ``(steps, P)``: the kernels' wall-clock seconds, kept beside a
        cost timed otherwise (or counted in work units); ``wall - cost`` of a CPU-timed trace
        is the time the core was taken away.
    """

    domain_shape: tuple[int, ...]
    parts_shape: tuple[int, ...]
    cost: np.ndarray
    halo: HaloGraph
    units: str = "s"
    work: np.ndarray | None = None
    app: str = ""
    scene: str = ""
    clock: str = ""
    wall: np.ndarray | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "domain_shape", tuple(int(x) for x in self.domain_shape))
        object.__setattr__(self, "parts_shape", tuple(int(x) for x in self.parts_shape))
        check_grid(self.domain_shape, self.parts_shape, "parts_shape")
        cost = np.asarray(self.cost)
        if cost.ndim != 2 or cost.shape[1] != self.n_parts or cost.shape[0] < 1:
            raise InputError(
                "cost", f"has shape {cost.shape}", f"(steps >= 1, {self.n_parts} partitions)"
            )
        if not np.issubdtype(cost.dtype, np.floating) and not np.issubdtype(cost.dtype, np.integer):
            raise InputError("cost", f"has dtype {cost.dtype}", "float64")
        cost = cost.astype(np.float64, copy=False)
        object.__setattr__(self, "cost", _non_negative(cost, "cost"))
        if self.units not in UNITS:
            raise InputError("units", f"got {self.units!r}", f"one of {', '.join(UNITS)}")
        if self.clock not in TRACE_CLOCKS:
            raise InputError("clock", f"got {self.clock!r}", "cpu, wall or empty")
        if self.wall is not None:
            wall = np.asarray(self.wall)
            if wall.shape != cost.shape:
                raise InputError("wall", f"has shape {wall.shape}", f"{cost.shape} like cost")
            if wall.dtype.kind not in "fiu":
                raise InputError("wall", f"has dtype {wall.dtype}", "float64")
            object.__setattr__(self, "wall", _non_negative(wall.astype(np.float64), "wall"))
        self.halo.validate(self.n_parts)
        if self.work is not None:
            work = np.asarray(self.work)
            if work.shape != cost.shape:
                raise InputError("work", f"has shape {work.shape}", f"{cost.shape} like cost")
            object.__setattr__(self, "work", work)

    @property
    def n_parts(self) -> int:
        """Number of partitions P."""
        return math.prod(self.parts_shape)

    @property
    def n_steps(self) -> int:
        """Number of steps in the trace."""
        return self.cost.shape[0]

    @property
    def ndim(self) -> int:
        """2 or 3."""
        return len(self.parts_shape)

    def steps(self, start: int, stop: int, where: str = "--step-range") -> Workload:
        """The trace restricted to steps ``start:stop``; errors name ``where`` (the option)."""
        if not 0 <= start < stop <= self.n_steps:
            raise InputError(where, f"got {start}:{stop}", f"a:b with 0 <= a < b <= {self.n_steps}")
        work = None if self.work is None else self.work[start:stop]
        wall = None if self.wall is None else self.wall[start:stop]
        return Workload(
            self.domain_shape,
            self.parts_shape,
            self.cost[start:stop],
            self.halo,
            self.units,
            work,
            self.app,
            self.scene,
            self.clock,
            wall,
        )


def _non_negative(values: np.ndarray, name: str) -> np.ndarray:
    """``values`` (float64, ``(steps, P)``) if finite and >= 0, else the error naming the cell."""
    if not np.all(np.isfinite(values)):
        step, part = np.argwhere(~np.isfinite(values))[0]
        raise InputError(name, f"is not finite at step {step}, partition {part}", None)
    if values.size and values.min() < 0:
        step, part = np.argwhere(values < 0)[0]
        raise InputError(
            name,
            f"is negative ({values[step, part]}) at step {step}, partition {part}",
            f"{name} >= 0",
        )
    return values


@dataclass(frozen=True)
class StepNoise:
    """How much a trace's costs vary from step to step, and how much of it the work explains.

    Attributes
    ----------
    unexplained
        RMS over partitions and steps of what is left of each partition's cost once its
        mean and its least-squares line in its work count are taken away, over the mean
        cost of a partition in a step (NaN below 3 steps or with no cost). The same
        relative scale as the LIF: 0.3 is a cost 30% off its work's share, typically.
    work
        RMS step-to-step variation of each partition's work count around its mean, over the
        mean work count (NaN without work counts or with none): the variation the costs may
        show for a reason.
    """

    unexplained: float
    work: float

    def exceeds(self, limit: float) -> bool:
        """Whether the unexplained variation is over ``limit`` (never when it is NaN)."""
        return bool(self.unexplained > limit)


def step_noise(cost: np.ndarray, work: np.ndarray | None = None) -> StepNoise:
    """Step-to-step variation of each partition's cost that its work counts do not explain.

    Each partition's costs over the steps are fitted by ``a + b * work`` (``b = 0`` where its
    work does not vary, or without work counts); the residuals, pooled over the partitions
    with one degree of freedom per fitted parameter, are the variation the work counts do
    not explain: a uniform program timed on a busy core (its work constant, its costs
    jumping) scores high; one whose costs follow its work scores near 0.

    Parameters
    ----------
    cost
        float64, ``(steps, P)``: seconds (or any unit) per partition per step.
    work
        ``(steps, P)``: the work counts, or ``None``.
    """
    cost = np.asarray(cost, dtype=np.float64)
    steps = cost.shape[0]
    scale = float(cost.mean()) if cost.size else 0.0
    dc = cost - cost.mean(axis=0)
    fitted = np.zeros(cost.shape[1], dtype=bool)
    work_rel = math.nan
    if work is not None:
        w = np.asarray(work, dtype=np.float64)
        dw = w - w.mean(axis=0)
        spread = (dw * dw).sum(axis=0)
        fitted = spread > 0
        slope = np.divide((dw * dc).sum(axis=0), spread, out=np.zeros_like(spread), where=fitted)
        dc = dc - slope * dw
        mean_work = float(w.mean()) if w.size else 0.0
        if steps >= 2 and mean_work > 0:
            work_rel = math.sqrt(float(spread.sum()) / (w.shape[1] * (steps - 1))) / mean_work
    dof = cost.shape[1] * (steps - 1) - int(fitted.sum())
    if steps < 3 or scale <= 0 or dof <= 0:
        return StepNoise(math.nan, work_rel)
    return StepNoise(math.sqrt(float((dc * dc).sum()) / dof) / scale, work_rel)
