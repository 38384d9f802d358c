"""A Z-Model run as a grapeshot workload (trace) the simulator can scale up.

Partitions are the cutoff solver's spatial micro-partitions (``sx x sy`` columns of space);
``work[k, p]`` is the surface points in micro-partition p at step k; ``cost[k, p]`` is the
measured wall time of step k on the rank holding p, shared among its micro-partitions in
proportion to their points (seconds). Per-rank phase times and points are stored beside the
workload in the group ``zmodel/`` of the same HDF5 file.
"""

from __future__ import annotations

import math
import os

import numpy as np

from grapeshot.apps.zmodel.cutoff import RECORD_BYTES, part_of
from grapeshot.apps.zmodel.mesh import initial_state
from grapeshot.apps.zmodel.model import PHASES, SerialBackend, rk3_step, strength_factor
from grapeshot.apps.zmodel.params import ZModelParams
from grapeshot.model.atomic import atomic_path
from grapeshot.model.errors import InputError, check_int
from grapeshot.model.workload import Workload, grid_halo


def record_to_workload(rec, cells_per_part: int = 4) -> Workload:
    """The :class:`~grapeshot.model.workload.Workload` of a
    :class:`~grapeshot.apps.zmodel.driver.RunRecord` (see module doc)."""
    sx, sy = rec.spatial_parts
    steps = rec.part_points.shape[0]
    rank_time = rec.phase_times.sum(axis=2)  # (steps, ranks)
    cost = np.zeros((steps, sx * sy))
    for k in range(steps):
        owner = rec.rank_of_part[k]
        pts = rec.part_points[k].astype(np.float64)
        per_rank = np.bincount(owner, weights=pts, minlength=rec.ranks)
        share = np.divide(pts, per_rank[owner], out=np.zeros_like(pts), where=per_rank[owner] > 0)
        cost[k] = rank_time[k, owner] * share
    domain = (sx * cells_per_part, sy * cells_per_part)
    n = rec.params.nodes
    # ghost traffic estimate: points per cell column times the record size, one cell deep
    cell_bytes = max(1, int(RECORD_BYTES * n * n / (domain[0] * domain[1])))
    halo = grid_halo(domain, (sx, sy), ghost=1, cell_bytes=cell_bytes)
    scene = f"{rec.params.order}-{rec.params.solver}-{rec.params.boundary}-{rec.params.init}"
    return Workload(
        domain, (sx, sy), cost, halo, "s", rec.part_points.astype(np.float64), "zmodel", scene
    )


def save_trace(path: str | os.PathLike[str], rec) -> None:
    """Write the workload of ``rec`` plus ``zmodel/phase_times`` (steps, ranks, phases),
    ``zmodel/rank_points`` and ``zmodel/rank_of_part``, atomically."""
    import h5py

    from grapeshot.model.workload_file import save_workload

    with atomic_path(path) as tmp:
        save_workload(tmp, record_to_workload(rec))
        with h5py.File(tmp, "a") as f:
            g = f.create_group("zmodel")
            g.create_dataset("phase_times", data=rec.phase_times)
            g.create_dataset("rank_points", data=rec.rank_points)
            g.create_dataset("rank_of_part", data=rec.rank_of_part)
            g.attrs["phases"] = ",".join(PHASES)
            g.attrs["ranks"] = rec.ranks
            g.attrs["mesh"] = rec.params.mesh


# ------------------------------------------------------------------ trace generator (APPS)
#: Scenes of :func:`make_trace` (``grapeshot trace zmodel --scene ...``).
SCENES: dict[str, str] = {
    "rollup": "single-mode sech^2 roll-up, high order, cutoff 0.25, free (Beatnik figs 6-7)",
    "multimode": "multi-mode cos interface, high order, cutoff 0.2, periodic (weak scaling)",
}


def scene_params(scene: str, mesh: int, steps: int) -> ZModelParams:
    """The :class:`ZModelParams` of ``scene`` (Beatnik's input decks, spec §4.3)."""
    if scene == "rollup":
        return ZModelParams(
            mesh=mesh,
            order="high",
            solver="cutoff",
            boundary="free",
            init="single",
            magnitude=0.1,
            modes=9.0,
            atwood=0.15,
            mu=2.0,
            epsilon=2.0,
            cutoff=0.25,
            steps=steps,
        )
    if scene == "multimode":
        return ZModelParams(
            mesh=mesh, order="high", solver="cutoff", boundary="periodic", cutoff=0.2, steps=steps
        )
    raise InputError("scene", f"unknown Z-Model scene {scene!r}", f"one of {', '.join(SCENES)}")


def rollup_counts(p: ZModelParams, parts: tuple[int, int], progress=None) -> np.ndarray:
    """Surface points per spatial micro-partition after every step of a one-process run,
    int64 (steps + 1, sx * sy); row 0 is the initial state."""
    return rollup_history(p, [parts], progress=progress)[0][0]


def rollup_history(
    p: ZModelParams,
    grids: list[tuple[int, int]],
    keep: tuple[int, ...] = (),
    progress=None,
) -> tuple[list[np.ndarray], dict[int, np.ndarray]]:
    """One one-process run counted on several micro-partition grids at once.

    Parameters
    ----------
    p
        The run.
    grids
        Micro-partition grids (sx, sy) to count points on.
    keep
        Steps whose owned surface points (n*n, 3) to return (e.g. to measure ghosts).
    progress
        Optional ``progress(step, steps)`` callback.

    Returns
    -------
    (counts, points)
        ``counts[g]``: int64 (steps + 1, sx * sy) points per micro-partition of ``grids[g]``
        after every step (row 0: the initial state); ``points[s]``: positions at step ``s``
        in global node order.
    """
    be = SerialBackend(p)
    z, w = initial_state(p, be.block)
    factor = strength_factor(p, be.block)
    n = p.nodes
    out: list[list[np.ndarray]] = [[] for _ in grids]
    kept: dict[int, np.ndarray] = {}

    def record(step: int) -> None:
        pts = z[:, 2 : 2 + n, 2 : 2 + n].reshape(3, -1).T
        for g, parts in enumerate(grids):
            out[g].append(np.bincount(part_of(pts, p.box, parts), minlength=parts[0] * parts[1]))
        if step in keep:
            kept[step] = pts.copy()

    record(0)
    for k in range(p.n_steps):
        rk3_step(z, w, be, factor)
        record(k + 1)
        if progress is not None:
            progress(k + 1, p.n_steps)
    return [np.asarray(c, dtype=np.int64) for c in out], kept


def make_trace(scene: str, parts, steps: int, *, cells=None, seed=0, progress=None) -> Workload:
    """Run a Z-Model scene on one process and record points per spatial micro-partition.

    Parameters
    ----------
    scene
        A key of :data:`SCENES`.
    parts
        Micro-partitions per axis of space (x, y): 2 values.
    steps
        Time steps to record (>= 1).
    cells
        Surface nodes per dimension (Beatnik ``-n``; an integer or two equal values;
        default 64).
    seed
        Unused (the scenes are deterministic); accepted for the trace contract.

    Returns
    -------
    Workload
        ``work`` = ``cost`` = points per micro-partition per step (units ``"work"``: the
        cutoff sum's cost grows with the points a rank owns); the domain is the surface's
        node grid, so at least one node per micro-partition and axis.
    """
    del seed
    try:
        sx, sy = (int(v) for v in parts)
    except (TypeError, ValueError):
        raise InputError("parts", f"got {parts!r}", "2 partition counts (x, y)") from None
    check_int(steps, "steps")
    if cells is None:
        mesh = 64
    else:
        vals = [int(cells)] if np.isscalar(cells) else [int(c) for c in cells]
        if len(set(vals)) != 1:
            raise InputError("cells", f"got {cells!r}", "one node count (a square mesh)")
        mesh = vals[0]
    p = scene_params(scene, mesh, steps)
    counts = rollup_counts(p, (sx, sy), progress)[1:]
    return counts_workload(p, (sx, sy), counts, scene)


def counts_workload(
    p: ZModelParams,
    parts: tuple[int, int],
    counts: np.ndarray,
    scene: str = "",
    *,
    cutoff_halo: bool = False,
) -> Workload:
    """A ``"work"`` workload of points per micro-partition ``counts`` (steps, sx * sy).

    The domain is the surface's node grid, one record per node, wrapping around if the
    surface is periodic. The halo is one ghost column of records per neighbour pair, or with
    ``cutoff_halo`` a band as wide as the cutoff (in node spacings): what the cutoff solver
    copies, every point within the cutoff of a part, on the flat surface's density. A band
    wider than a part is clipped to the part (only the 8 neighbours send), so give parts at
    least as wide as the cutoff."""
    domain = (p.nodes, p.nodes)
    ghost = max(1, math.ceil(p.cutoff / p.spacing - 1e-9)) if cutoff_halo else 1
    halo = grid_halo(domain, parts, ghost=ghost, cell_bytes=RECORD_BYTES, periodic=p.periodic)
    work = np.asarray(counts, dtype=np.float64)
    return Workload(domain, parts, work, halo, "work", work, "zmodel", scene)
