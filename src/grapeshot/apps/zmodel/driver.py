"""The Z-Model on MPI ranks: Beatnik's 2-D block decomposition, halos, the exact ring pass,
the distributed FFT and the cutoff solver's surface <-> space migration.

MPI lives here only; every numerical step is a pure function of :mod:`.model`,
:mod:`.operators`, :mod:`.kernels`, :mod:`.fft` and :mod:`.cutoff`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grapeshot.apps.zmodel import operators as op
from grapeshot.apps.zmodel.cutoff import (
    DYNAMIC_SPATIAL,
    DynamicPlacement,
    cutoff_sum,
    ghost_pairs,
    part_bounds,
    part_of,
    place_parts,
)
from grapeshot.apps.zmodel.fft import DistributedRiesz
from grapeshot.apps.zmodel.kernels import br_all_pairs, image_offsets
from grapeshot.apps.zmodel.mesh import Block, dims_create, initial_state, make_block
from grapeshot.apps.zmodel.model import PHASES, rhs, rk3_step, strength_factor
from grapeshot.apps.zmodel.output import write_surface_vtk
from grapeshot.apps.zmodel.params import ZModelParams
from grapeshot.apps.zmodel.views import to_view_array, view_name, write_view
from grapeshot.model.errors import InputError


@dataclass
class SpatialOptions:
    """The cutoff solver's spatial decomposition.

    ``parts``: micro-partitions per axis (None: one per rank, Beatnik's layout);
    ``strategy``: see :func:`grapeshot.apps.zmodel.cutoff.place_parts`; ``seed`` for
    random strategies; ``interval`` (evaluations between calls) and ``options`` (other
    keyword overrides) for the dynamic ones (:class:`~grapeshot.apps.zmodel.cutoff.
    DynamicPlacement`); ``exchange``: the ``grapeshot.exchange`` schedule of the surface <->
    space migrations and ghost sends (None: one ``MPI_Alltoallv`` each).
    """

    parts: tuple[int, int] | None = None
    strategy: str = "beatnik"
    seed: int = 0
    interval: int | None = None
    options: dict | None = None
    exchange: str | None = None


@dataclass
class RunRecord:
    """What a run measured, on every rank (gathered to rank 0 by :func:`run`)."""

    params: ZModelParams
    ranks: int
    dims: tuple[int, int]
    spatial_parts: tuple[int, int]
    phase_times: np.ndarray  # (steps, ranks, len(PHASES)) seconds
    part_points: np.ndarray  # (steps, sx*sy) surface points per micro-partition
    rank_points: np.ndarray  # (steps, ranks) points per rank in space
    rank_of_part: np.ndarray  # (steps, sx*sy)
    step_seconds: np.ndarray  # (steps,) max over ranks
    extra: dict = field(default_factory=dict)


class MPIBackend:
    """The :class:`grapeshot.apps.zmodel.model.Backend` of one MPI rank."""

    def __init__(
        self,
        params: ZModelParams,
        comm,
        dims: tuple[int, int] | None = None,
        spatial: SpatialOptions | None = None,
    ) -> None:
        from mpi4py import MPI

        self.params = params
        size = comm.Get_size()
        self.dims = dims if dims is not None else dims_create(size)
        if self.dims[0] * self.dims[1] != size:
            raise InputError("--dims", f"{self.dims} for {size} ranks", "px * py == ranks")
        if size > 1:
            # one rank per core: numba's threads would oversubscribe the cores
            import numba

            numba.set_num_threads(1)
        per = bool(params.periodic)
        self.cart = comm.Create_cart(list(self.dims), periods=[per, per], reorder=False)
        self.rank = self.cart.Get_rank()
        self.size = size
        self.blocks = [make_block(params, size, r, self.dims) for r in range(size)]
        self.block: Block = self.blocks[self.rank]
        self.edges = self.block.edges()
        self.timers: dict[str, float] = defaultdict(float)
        self._nbrs = [self.cart.Shift(axis, 1) for axis in (0, 1)]
        self._shift = op.seam_shift(params.length, self.edges)
        self._offsets = image_offsets(params.periodic, params.length)
        self._proc_null = MPI.PROC_NULL
        self.riesz_op = None
        if params.uses_riesz:
            boxes = [(b.i0, b.i1, b.j0, b.j1) for b in self.blocks]
            self.riesz_op = DistributedRiesz(
                self.cart, boxes, self.dims, (params.nodes, params.nodes), params.fft_config
            )
        counts = [b.shape[0] * b.shape[1] for b in self.blocks]
        self._counts = np.asarray(counts)
        _ni, _nj = self.block.shape
        gi, gj = np.meshgrid(
            np.arange(self.block.i0, self.block.i1),
            np.arange(self.block.j0, self.block.j1),
            indexing="ij",
        )
        self.gid = (gi * params.nodes + gj).ravel().astype(np.int64)
        spatial = spatial or SpatialOptions()
        self.spatial = spatial
        self.parts = spatial.parts or self.dims
        self.reset_placement()
        self.last_part_points = np.zeros(self.parts[0] * self.parts[1], np.int64)
        if spatial.exchange is not None:
            from grapeshot.exchange.schedules import ALGORITHMS

            if spatial.exchange not in ALGORITHMS:
                raise InputError(
                    "--exchange",
                    f"unknown exchange schedule {spatial.exchange!r}",
                    f"one of {', '.join(ALGORITHMS)}",
                )

    def reset_placement(self) -> None:
        """The starting spatial placement (at construction, and again after an untimed
        warm-up evaluation has moved a dynamic or greedy one; static ones are the same for
        their seed)."""
        sp = self.spatial
        self.dynamic = None
        if sp.strategy in DYNAMIC_SPATIAL:
            self.dynamic = DynamicPlacement(
                sp.strategy,
                self.parts,
                self.dims,
                seed=sp.seed,
                interval=sp.interval,
                options=sp.options,
            )
            self.rank_of_part = self.dynamic.node_of
        else:
            self.rank_of_part = place_parts(sp.strategy, self.parts, self.dims, seed=sp.seed)

    # ---------------------------------------------------------------------------- halos
    def _exchange(self, f: np.ndarray, axis: int) -> None:
        lo, hi = self._nbrs[axis]
        H = op.H
        n = f.shape[axis + 1] - 2 * H

        def sl(a: int, b: int) -> tuple:
            idx: list = [slice(None), slice(None), slice(None)]
            idx[axis + 1] = slice(a, b)
            return tuple(idx)

        # send my low owned faces down, receive my high ghosts from above; then the reverse
        send = np.ascontiguousarray(f[sl(H, 2 * H)])
        recv = np.empty_like(send)
        self.cart.Sendrecv(send, dest=lo, sendtag=1, recvbuf=recv, source=hi, recvtag=1)
        if hi != self._proc_null:
            f[sl(n + H, n + 2 * H)] = recv
        send = np.ascontiguousarray(f[sl(n, n + H)])
        self.cart.Sendrecv(send, dest=hi, sendtag=2, recvbuf=recv, source=lo, recvtag=2)
        if lo != self._proc_null:
            f[sl(0, H)] = recv

    def fill_halo(self, f: np.ndarray, position: bool) -> None:
        op.fill_halo(
            f, self._exchange, self.edges, self.params.periodic, self._shift if position else None
        )

    # ----------------------------------------------------------------------------- FFT
    def riesz(self, w: np.ndarray) -> np.ndarray:
        return self.riesz_op(w)

    # ------------------------------------------------------------------------------ BR
    def br(self, z: np.ndarray, strength: np.ndarray) -> np.ndarray:
        pts = np.ascontiguousarray(z.reshape(3, -1).T)
        s = np.ascontiguousarray(strength.reshape(3, -1).T)
        if self.params.solver == "cutoff":
            out = self._br_cutoff(pts, s)
        else:
            out = self._br_ring(pts, s)
        return out.T.reshape(z.shape)

    def _br_ring(self, pts: np.ndarray, s: np.ndarray) -> np.ndarray:
        """Beatnik's ring pass: my block first, then P - 1 Sendrecv steps around the ring."""
        out = np.zeros_like(pts)
        eps = self.params.eps_eff
        br_all_pairs(pts, pts, s, self._offsets, eps, out)
        cur = np.concatenate((pts, s), axis=1)
        dest, src = (self.rank + 1) % self.size, (self.rank - 1) % self.size
        for step in range(1, self.size):
            origin = (self.rank - step) % self.size
            buf = np.empty((self._counts[origin], 6))
            t0 = time.perf_counter()
            self.cart.Sendrecv(cur, dest=dest, sendtag=3, recvbuf=buf, source=src, recvtag=3)
            self.timers["migration"] += time.perf_counter() - t0
            cur = buf
            br_all_pairs(
                pts,
                np.ascontiguousarray(cur[:, :3]),
                np.ascontiguousarray(cur[:, 3:]),
                self._offsets,
                eps,
                out,
            )
        return out

    def _alltoallv(self, rows: np.ndarray, dest: np.ndarray, width: int) -> tuple:
        """Send ``rows`` (n, width) float64 to ranks ``dest``; returns (rows, source ranks)."""
        from mpi4py import MPI

        order = np.argsort(dest, kind="stable")
        rows = np.ascontiguousarray(rows[order])
        scount = np.bincount(dest, minlength=self.size).astype(np.int64)
        if self.spatial.exchange is not None:
            recv, rcount = self._scheduled(rows, scount, width)
            return recv, np.repeat(np.arange(self.size), rcount), order
        rcount = np.empty(self.size, np.int64)
        self.cart.Alltoall(scount, rcount)
        sdisp = np.concatenate(([0], np.cumsum(scount)[:-1]))
        rdisp = np.concatenate(([0], np.cumsum(rcount)[:-1]))
        recv = np.empty((int(rcount.sum()), width))
        self.cart.Alltoallv(
            [rows, (scount * width, sdisp * width), MPI.DOUBLE],
            [recv, (rcount * width, rdisp * width), MPI.DOUBLE],
        )
        return recv, np.repeat(np.arange(self.size), rcount), order

    def _scheduled(self, rows: np.ndarray, scount: np.ndarray, width: int) -> tuple:
        """The same exchange as :meth:`_alltoallv` by a ``grapeshot.exchange`` schedule:
        rows received in source-rank order (own rows kept locally); (rows, counts)."""
        from grapeshot.exchange.mpi_exchange import exchange_once

        disp = np.concatenate(([0], np.cumsum(scount)))
        sends = {
            int(j): rows[disp[j] : disp[j + 1]].view(np.uint8).reshape(-1)
            for j in np.flatnonzero(scount)
            if j != self.rank
        }
        # the pattern changes at every evaluation: plan and run once (same seed everywhere)
        got = exchange_once(
            sends, comm=self.cart, algorithm=self.spatial.exchange, seed=self.spatial.seed
        )
        blocks = []
        for src in range(self.size):
            if src == self.rank:
                blocks.append(rows[disp[src] : disp[src + 1]])
            elif src in got:
                blocks.append(got[src].view(np.float64).reshape(-1, width))
        recv = np.concatenate(blocks) if blocks else np.empty((0, width))
        rcount = np.array(
            [
                scount[self.rank]
                if src == self.rank
                else (got[src].size // (8 * width) if src in got else 0)
                for src in range(self.size)
            ],
            np.int64,
        )
        return recv, rcount

    def _br_cutoff(self, pts: np.ndarray, s: np.ndarray) -> np.ndarray:
        """Surface -> space migration, ghosts within the cutoff, sums, migration back."""
        p = self.params
        no = len(self._offsets)
        zero = int(np.flatnonzero(~self._offsets.any(axis=1))[0])
        t0 = time.perf_counter()
        part = part_of(pts, p.box, self.parts)
        if self.spatial.strategy == "greedy" or self.dynamic is not None:
            # every point migrates to space anyway, so the micro-partitions can be re-placed
            # at each evaluation at no extra cost, from the exact points per part (dynamic
            # strategies: every `interval` evaluations, by the strategy's own rule)
            nparts = self.parts[0] * self.parts[1]
            loads = np.zeros(nparts, np.int64)
            self.cart.Allreduce(np.bincount(part, minlength=nparts).astype(np.int64), loads)
            if self.dynamic is not None:
                self.rank_of_part = self.dynamic.update(loads)
            else:
                self.rank_of_part = place_parts("greedy", self.parts, self.dims, loads=loads)
        dest = self.rank_of_part[part].astype(np.int64)
        local = np.arange(len(pts), dtype=np.float64)
        rec = np.column_stack((pts, s, self.gid.astype(np.float64), local))
        mine, senders, _ = self._alltoallv(rec, dest, 8)
        t1 = time.perf_counter()
        self.timers["migration"] += t1 - t0
        mpos, mstr, mgid = mine[:, :3], mine[:, 3:6], mine[:, 6].astype(np.int64)
        mpart = part_of(mpos, p.box, self.parts)
        counts = np.bincount(mpart, minlength=self.parts[0] * self.parts[1])
        self.last_part_points = np.zeros_like(counts)
        self.cart.Allreduce(counts, self.last_part_points)
        from mpi4py import MPI

        nparts = self.parts[0] * self.parts[1]
        local_b = part_bounds(mpos, mpart, nparts)
        bounds = np.empty_like(local_b)
        # min of (xmin, -xmax, ymin, -ymax) over ranks = the global boxes
        flip = np.array([1.0, -1.0, 1.0, -1.0])
        self.cart.Allreduce(local_b * flip, bounds, op=MPI.MIN)
        bounds *= flip
        home = np.full(len(mpos), self.rank, np.int64)
        gp, go, gr = ghost_pairs(
            mpos, self._offsets, p.box, self.parts, p.cutoff, self.rank_of_part, home, bounds
        )
        grec = np.column_stack(
            (mpos[gp] + self._offsets[go], mstr[gp], (mgid[gp] * no + go).astype(np.float64))
        )
        selfmask = gr == self.rank
        remote, _, _ = self._alltoallv(grec[~selfmask], gr[~selfmask], 7)
        ghosts = np.concatenate((grec[selfmask], remote))
        t2 = time.perf_counter()
        self.timers["br_halo"] += t2 - t1
        src = np.concatenate((mpos, ghosts[:, :3]))
        stren = np.concatenate((mstr, ghosts[:, 3:6]))
        keys = np.concatenate((mgid * no + zero, ghosts[:, 6].astype(np.int64)))
        u = cutoff_sum(mpos, src, stren, keys, p.cutoff, p.eps_eff)
        t3 = time.perf_counter()
        # back to the surface owners: (local index, u); owner rank of each record = sender
        back, _, _ = self._alltoallv(np.column_stack((mine[:, 7], u)), senders, 4)
        out = np.empty_like(pts)
        out[back[:, 0].astype(np.int64)] = back[:, 1:]
        self.timers["migration"] += time.perf_counter() - t3
        return out


def run(
    params: ZModelParams,
    comm=None,
    *,
    dims: tuple[int, int] | None = None,
    spatial: SpatialOptions | None = None,
    views: str | Path | None = None,
    vtk: str | Path | None = None,
    vtk_every: int = 10,
    steps: int | None = None,
) -> tuple[RunRecord | None, np.ndarray, np.ndarray, MPIBackend]:
    """Run the rocket rig on ``comm`` (default COMM_WORLD).

    Returns ``(record on rank 0 else None, padded z, padded w, backend)``.
    """
    from mpi4py import MPI

    comm = comm if comm is not None else MPI.COMM_WORLD
    be = MPIBackend(params, comm, dims, spatial)
    z, w = initial_state(params, be.block)
    factor = strength_factor(params, be.block)
    nsteps = params.n_steps if steps is None else steps
    nparts = be.parts[0] * be.parts[1]
    times = np.zeros((nsteps, len(PHASES)))
    part_points = np.zeros((nsteps, nparts), np.int64)
    placements = np.zeros((nsteps, nparts), np.int32)
    step_s = np.zeros(nsteps)
    if vtk is not None:
        write_surface_vtk(vtk, 0, 0.0, z, w, be)
    if nsteps:
        # one untimed evaluation on copies loads the compiled kernels (numba's cache) so the
        # first step's phase times are not the loading time
        rhs(z.copy(), w.copy(), be, factor)
        be.reset_placement()
    for k in range(nsteps):
        be.timers.clear()
        t0 = time.perf_counter()
        rk3_step(z, w, be, factor)
        step_s[k] = time.perf_counter() - t0
        placements[k] = be.rank_of_part  # the placement of the step's last evaluation
        times[k] = _phase_times(be.timers)
        if params.solver == "cutoff" and params.uses_br:
            part_points[k] = be.last_part_points
        else:
            part_points[k] = _count_parts(be, z)
        if vtk is not None and (k + 1) % max(vtk_every, 1) == 0:
            write_surface_vtk(vtk, k + 1, (k + 1) * params.dt, z, w, be)
    be.fill_halo(z, True)
    be.fill_halo(w, False)
    if views is not None:
        for name, arr in (("z", z), ("w", w)):
            path = Path(views) / view_name(name, params.mesh, params.periodic, be.rank, be.size)
            write_view(path, to_view_array(arr, be.block.cells_local))
    all_times = be.cart.gather(times, root=0)
    step_max = np.zeros_like(step_s)
    be.cart.Reduce(step_s, step_max, op=MPI.MAX, root=0)
    if be.rank != 0:
        return None, z, w, be
    phase = np.stack(all_times, axis=1)
    rank_points = (
        np.stack(
            [
                np.bincount(placements[k], weights=part_points[k], minlength=be.size)
                for k in range(nsteps)
            ]
        )
        if nsteps
        else np.zeros((0, be.size))
    )
    record = RunRecord(
        params, be.size, be.dims, be.parts, phase, part_points, rank_points, placements, step_max
    )
    return record, z, w, be


def _phase_times(t: dict[str, float]) -> list[float]:
    """PHASES from the backend's timers: "br" includes its migration and halo sub-timers."""
    mig, bhalo = t.get("migration", 0.0), t.get("br_halo", 0.0)
    br = max(t.get("br", 0.0) - mig - bhalo, 0.0)
    return [t.get("halo", 0.0) + bhalo, t.get("stencil", 0.0), t.get("fft", 0.0), br, mig]


def _count_parts(be: MPIBackend, z: np.ndarray) -> np.ndarray:
    """Surface points per spatial micro-partition (all ranks), from the owned positions."""
    pts = op.owned(z).reshape(3, -1).T
    counts = np.bincount(
        part_of(pts, be.params.box, be.parts), minlength=be.parts[0] * be.parts[1]
    ).astype(np.int64)
    total = np.zeros_like(counts)
    be.cart.Allreduce(counts, total)
    return total
