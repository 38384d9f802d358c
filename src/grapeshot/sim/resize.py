"""How partitions-per-core meets a trace: the explicit rule that gives an experiment its grid.

**Without ``--ppc``** the workload is used as it comes: a trace's partitions, a synthetic
SPEC's ``parts=``, whatever their number ``P`` on the machine's ``C`` cores
(:meth:`WorkloadSource.as_given`). Nothing is merged or regenerated; the static strategies
give each node its share of ``P`` by cores, within one (the quota rule of
:mod:`grapeshot.place.quota`), and the run reports the real partitions per core ``P / C``
(128 partitions on 4 nodes of 18 cores: 1.78). With fewer partitions than cores some cores
get none and idle (:func:`sparse_note` says how many).

**With ``--ppc k``** on ``n`` nodes of ``c`` cores the experiment needs exactly
``P' = n * c * k`` partitions (the sum of the nodes' cores times ``k`` on machines whose nodes
differ). The rule, in order:

1. **The workload already has ``P'`` partitions**: it is used as it is.
2. **A synthetic SPEC** is regenerated over the *same domain* (the same cells: the same
   physical problem) on the grid with exactly ``P'`` partitions whose partitions are the
   closest to square (cube) in cells (:func:`grid_for`). Cell-level parameters (the dam
   break's ``cell_cost``) keep their meaning; partition-level cost parameters (``binary``'s
   ``busy_cost``, ``uniform``'s ``a`` and ``b``, the dam break's ``floor``) are scaled by
   ``P_spec / P'`` so the work per step is the same in expectation. Halo bytes come from the
   new boxes (:func:`~grapeshot.model.workload.grid_halo` with the SPEC's ``ghost`` and
   ``cell_bytes``).
3. **A trace file** (a fixed fine grid) is coarsened by merging whole blocks of
   ``f_0 x f_1 (x f_2)`` partitions, ``f_a`` dividing the grid's extent on axis ``a``, with
   ``prod(parts / f) = P'`` (among several, the blocks whose merged partitions are closest to
   square in cells). Merged costs (and work counts) are the sums of their blocks. The merged
   boxes are exactly the partition boxes of the coarse grid, so the halo is recomputed with
   ``grid_halo`` when the trace's halo is recognisably one (some ``ghost`` in 1..8, corners
   or not, and a constant ``cell_bytes``); otherwise a merged message carries the sum of the
   fine messages crossing between the two blocks.
4. Otherwise — the trace has fewer partitions than ``P'`` (it cannot be refined: the finer
   costs are not in it), or no block merge gives ``P'`` — an :class:`InputError` names the
   numbers. The experiment is never changed silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine
from grapeshot.model.synthetic import build_synthetic, parse_spec, synthetic_workload
from grapeshot.model.workload import HaloGraph, Workload, grid_halo

#: Synthetic keys that are costs per partition (scaled by P_spec / P' on regeneration).
PARTITION_LEVEL_KEYS: dict[str, tuple[str, ...]] = {
    "binary": ("busy_cost",),
    "uniform": ("a", "b"),
    "dambreak": ("floor",),
}


def parts_needed(machine: Machine, ppc: int) -> int:
    """Partitions an experiment with ``ppc`` partitions per core needs on ``machine``."""
    if isinstance(ppc, bool) or not isinstance(ppc, int | np.integer) or ppc < 1:
        raise InputError("--ppc", f"got {ppc!r}", "integers >= 1")
    return machine.total_cores * int(ppc)


def parts_per_core(n_parts: int, machine: Machine) -> float:
    """The real partitions per core of ``n_parts`` partitions on ``machine``: ``P / C``.

    Parameters
    ----------
    n_parts
        Partitions of the workload.
    machine
        The machine at the experiment's node count; ``C`` is the sum of its nodes' cores.

    Returns
    -------
    float
        ``n_parts / machine.total_cores``, e.g. 128 / 72 = 1.78 (not rounded: a workload used
        as it comes need not fill every core evenly).
    """
    return n_parts / machine.total_cores


def sparse_note(
    n_parts: int, machine: Machine, remedy: str = "fewer --nodes, or a finer partition grid"
) -> str | None:
    """A one-line note when ``n_parts`` partitions cannot keep every core busy, else ``None``.

    With fewer partitions than nodes some nodes get none; with fewer than cores (but at least
    one per node) some cores of the nodes get none. Either way those cores idle for the whole
    run: the run is valid, but the user should know before reading its numbers.

    Parameters
    ----------
    n_parts
        Partitions of the workload.
    machine
        The machine at the experiment's node count.
    remedy
        What the user can do about it (ends the note).

    Returns
    -------
    str or None
        E.g. ``"16 partitions on 100 nodes: 84 nodes get none (0.00889 per core); fewer
        --nodes, or a finer partition grid"``; ``None`` when every core can have a partition.
    """
    cores = machine.total_cores
    if n_parts >= cores:
        return None
    per_core = f"{parts_per_core(n_parts, machine):.3g} per core"
    if n_parts < machine.nodes:
        idle = f"{machine.nodes - n_parts} nodes get none"
        return f"{n_parts} partitions on {machine.nodes} nodes: {idle} ({per_core}); {remedy}"
    idle = f"{cores - n_parts} cores get none and idle"
    return f"{n_parts} partitions on {cores} cores: {idle} ({per_core}); {remedy}"


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _aspect(cells: tuple[float, ...]) -> float:
    return max(cells) / min(cells)


def grid_for(parts: int, domain_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The grid with exactly ``parts`` partitions over ``domain_shape`` cells, squarest cells.

    Among factorisations ``k_0 * ... * k_{d-1} = parts`` with ``k_a <= domain_shape[a]``, the
    one minimising the partitions' aspect ratio in cells (largest over smallest extent); ties
    go to the lexicographically larger grid. ``None`` when no factorisation fits the domain.
    """
    best: tuple[float, tuple[int, ...]] | None = None
    divs = _divisors(parts)
    ndim = len(domain_shape)
    candidates: list[tuple[int, ...]] = []
    if ndim == 2:
        candidates = [(d, parts // d) for d in divs]
    else:
        for d0 in divs:
            rest = parts // d0
            candidates.extend((d0, d1, rest // d1) for d1 in _divisors(rest))
    for grid in candidates:
        if any(k > d for k, d in zip(grid, domain_shape, strict=True)):
            continue
        key = _aspect(tuple(d / k for d, k in zip(domain_shape, grid, strict=True)))
        if (
            best is None
            or key < best[0] - 1e-12
            or (abs(key - best[0]) <= 1e-12 and grid > best[1])
        ):
            best = (key, grid)
    return None if best is None else best[1]


def _spec_domain(params: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    shape = tuple(params["parts"])
    cells = tuple(params["cells"])
    if len(cells) == 1:
        cells = cells * len(shape)
    if len(cells) != len(shape):
        raise InputError("--synthetic: cells", f"got {len(cells)} values", f"1 or {len(shape)}")
    return shape, tuple(k * c for k, c in zip(shape, cells, strict=True))


def regenerate_synthetic(spec: str, parts: int) -> Workload:
    """The synthetic SPEC's workload on exactly ``parts`` partitions (rule 2 above)."""
    kind, params = parse_spec(spec)
    shape, domain = _spec_domain(params)
    p_spec = math.prod(shape)
    if p_spec == parts:
        return synthetic_workload(spec)
    if kind not in PARTITION_LEVEL_KEYS:
        raise InputError(
            "--synthetic",
            f"kind {kind!r} has no regeneration rule for {parts} partitions",
            f"parts=... with exactly {parts} partitions in the SPEC",
        )
    grid = grid_for(parts, domain)
    if grid is None:
        raise InputError(
            "--ppc",
            f"needs {parts} partitions, but the SPEC's domain of {'x'.join(map(str, domain))} "
            "cells has no grid with that many partitions of at least one cell",
            "fewer partitions per core, or more cells (cells=...)",
        )
    params = dict(params)
    scale = p_spec / parts
    for key in PARTITION_LEVEL_KEYS[kind]:
        params[key] = params[key] * scale
    params["parts"] = grid
    scene = f"{spec} @ {parts} partitions ({'x'.join(map(str, grid))})"
    return build_synthetic(kind, params, domain, scene=scene)


def _merge_factors(workload: Workload, parts: int) -> tuple[int, ...] | None:
    shape = workload.parts_shape
    if workload.n_parts % parts:
        return None
    best: tuple[float, tuple[int, ...]] | None = None
    axes = [_divisors(k) for k in shape]
    grids: list[tuple[int, ...]] = [()]
    for divs in axes:
        grids = [(*g, d) for g in grids for d in divs]
    for f in grids:
        coarse = tuple(k // fa for k, fa in zip(shape, f, strict=True))
        if math.prod(coarse) != parts:
            continue
        key = _aspect(tuple(d / k for d, k in zip(workload.domain_shape, coarse, strict=True)))
        if best is None or key < best[0] - 1e-12 or (abs(key - best[0]) <= 1e-12 and f < best[1]):
            best = (key, f)
    return None if best is None else best[1]


def _recognise_halo(workload: Workload) -> tuple[int, bool, int] | None:
    """``(ghost, corners, cell_bytes)`` if the trace's halo is a grid halo, else ``None``."""
    halo = workload.halo
    for corners in (True, False):
        for ghost in range(1, 9):
            unit = grid_halo(
                workload.domain_shape,
                workload.parts_shape,
                ghost=ghost,
                cell_bytes=1,
                corners=corners,
            )
            if not (
                np.array_equal(unit.indptr, halo.indptr)
                and np.array_equal(unit.indices, halo.indices)
            ):
                continue
            if len(unit.nbytes) == 0:
                return ghost, corners, 1
            cell_bytes = int(halo.nbytes[0] // max(unit.nbytes[0], 1))
            if cell_bytes >= 1 and np.array_equal(unit.nbytes * cell_bytes, halo.nbytes):
                return ghost, corners, cell_bytes
    return None


def coarsen_trace(workload: Workload, parts: int) -> Workload:
    """Merge the trace's partitions into exactly ``parts`` partitions (rule 3 above)."""
    if workload.n_parts == parts:
        return workload
    if workload.n_parts < parts:
        raise InputError(
            "--ppc",
            f"needs {parts} partitions but the trace has {workload.n_parts} "
            f"({'x'.join(map(str, workload.parts_shape))}); a trace cannot be refined",
            f"a --ppc giving at most {workload.n_parts} partitions, or a finer trace",
        )
    f = _merge_factors(workload, parts)
    if f is None:
        raise InputError(
            "--ppc",
            f"needs {parts} partitions; the trace's {workload.n_parts} partitions "
            f"({'x'.join(map(str, workload.parts_shape))}) merge into no grid of exactly "
            f"{parts} whole blocks",
            "a --ppc whose partition count divides the trace's grid axis by axis",
        )
    shape = workload.parts_shape
    coarse = tuple(k // fa for k, fa in zip(shape, f, strict=True))
    coords = np.indices(shape).reshape(len(shape), -1)
    block = np.ravel_multi_index(
        tuple(coords[a] // f[a] for a in range(len(shape))), coarse
    ).astype(np.int64)
    steps = workload.n_steps
    cost = np.zeros((steps, parts))
    np.add.at(cost, (slice(None), block), workload.cost)
    work = None
    if workload.work is not None:
        work = np.zeros((steps, parts), dtype=np.result_type(workload.work.dtype, np.float64))
        np.add.at(work, (slice(None), block), workload.work)
    known = _recognise_halo(workload)
    if known is not None:
        ghost, corners, cell_bytes = known
        halo = grid_halo(
            workload.domain_shape, coarse, ghost=ghost, cell_bytes=cell_bytes, corners=corners
        )
    else:
        src = block[workload.halo.sources()]
        dst = block[workload.halo.indices]
        cross = src != dst
        key = src[cross] * parts + dst[cross]
        uniq, inverse = np.unique(key, return_inverse=True)
        nbytes = np.bincount(inverse, weights=workload.halo.nbytes[cross]).astype(np.int64)
        s, d = uniq // parts, uniq % parts
        indptr = np.zeros(parts + 1, dtype=np.int64)
        np.cumsum(np.bincount(s, minlength=parts), out=indptr[1:])
        halo = HaloGraph(indptr, d.astype(np.int64), nbytes)
    return Workload(
        domain_shape=workload.domain_shape,
        parts_shape=coarse,
        cost=cost,
        halo=halo,
        units=workload.units,
        work=work,
        app=workload.app,
        scene=f"{workload.scene} merged {'x'.join(map(str, f))}",
    )


@dataclass
class WorkloadSource:
    """Where an experiment's workload comes from: a trace or a synthetic SPEC, and a step range.

    :meth:`as_given` is the workload as it comes (no ``--ppc``); :meth:`at_parts` applies the
    partitions-per-core rule (an explicit ``--ppc``). Both cache what they build.
    """

    workload: Workload | None = None
    spec: str | None = None
    steps: tuple[int, int] | None = None
    _cache: dict[int, Workload] = field(default_factory=dict, repr=False)
    _given: Workload | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if (self.workload is None) == (self.spec is None):
            raise InputError("--trace/--synthetic", "need exactly one of them", "a file or a SPEC")

    @property
    def description(self) -> str:
        """The trace's scene or the SPEC."""
        return self.spec if self.spec is not None else (self.workload.scene or self.workload.app)

    def as_given(self) -> Workload:
        """The workload with its own partitions, restricted to the step range.

        A trace's partitions as recorded, a synthetic SPEC's ``parts=`` as written: nothing is
        merged or regenerated, whatever the machine.
        """
        if self._given is None:
            if self.spec is not None:
                wl = synthetic_workload(self.spec)
            else:
                assert self.workload is not None
                wl = self.workload
            if self.steps is not None:
                wl = wl.steps(*self.steps)
            self._given = wl
        return self._given

    def at_parts(self, parts: int) -> Workload:
        """The workload with exactly ``parts`` partitions, restricted to the step range."""
        if parts not in self._cache:
            if self.spec is not None:
                wl = regenerate_synthetic(self.spec, parts)
            else:
                assert self.workload is not None
                wl = coarsen_trace(self.workload, parts)
            if self.steps is not None:
                wl = wl.steps(*self.steps)
            self._cache[parts] = wl
        return self._cache[parts]
