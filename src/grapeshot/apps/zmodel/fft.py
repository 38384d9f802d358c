"""Distributed 2-D FFT of the surface by transposes (reshapes), with heFFTe's three knobs.

A *layout* gives each rank of a communicator a box ``(i0, i1, j0, j1)`` of the global
N1 x N2 grid. A *reshape plan* (pure, :func:`plan_reshape`) lists which sub-box goes to which
peer; :class:`Reshape` executes it with MPI, either as one ``Alltoallv`` (heFFTe
``use_alltoall``) or as non-blocking point-to-point messages. The knobs of
``fft_config`` (Beatnik's ``-H``, 0..7; bit 0 reorder, bit 1 pencils, bit 2 all-to-all):

- **all-to-all**: ``Alltoallv`` vs ``Isend``/``Irecv`` pairs;
- **pencils**: transposes stay inside the rows / columns of the px x py rank grid (blocks ->
  x-pencils within a column of ranks, back, blocks -> y-pencils within a row) vs slabs (blocks
  -> x-slabs -> y-slabs, both over all ranks);
- **reorder**: copy each pencil so the transformed axis is contiguous before the 1-D FFTs
  (heFFTe's ``use_reorder``) vs FFTs along a strided axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grapeshot.apps.zmodel.mesh import block_bounds, dims_create
from grapeshot.apps.zmodel.operators import riesz_multipliers, wavenumbers

Box = tuple[int, int, int, int]


def config_knobs(config: int) -> dict[str, bool]:
    """The three booleans of heFFTe configuration ``config`` (Beatnik's table 1)."""
    return {"alltoall": bool(config & 4), "pencils": bool(config & 2), "reorder": bool(config & 1)}


def _overlap(a: Box, b: Box) -> Box | None:
    i0, i1 = max(a[0], b[0]), min(a[1], b[1])
    j0, j1 = max(a[2], b[2]), min(a[3], b[3])
    return (i0, i1, j0, j1) if i0 < i1 and j0 < j1 else None


@dataclass(frozen=True)
class ReshapePlan:
    """What one rank sends and receives: ``(peer, box in global indices)`` lists."""

    src: Box
    dst: Box
    sends: tuple[tuple[int, Box], ...]
    recvs: tuple[tuple[int, Box], ...]


def plan_reshape(src: list[Box], dst: list[Box], rank: int) -> ReshapePlan:
    """The plan of ``rank`` moving data from layout ``src`` to layout ``dst`` (one box per
    rank of the communicator, in rank order)."""
    sends = tuple((p, o) for p, b in enumerate(dst) if (o := _overlap(src[rank], b)))
    recvs = tuple((p, o) for p, b in enumerate(src) if (o := _overlap(dst[rank], b)))
    return ReshapePlan(src[rank], dst[rank], sends, recvs)


def _local(box: Box, owner: Box) -> tuple[slice, slice]:
    return slice(box[0] - owner[0], box[1] - owner[0]), slice(box[2] - owner[2], box[3] - owner[2])


def apply_reshape_local(plans: list[ReshapePlan], data: list[np.ndarray]) -> list[np.ndarray]:
    """Execute the plans of every rank in one process (reference for tests)."""
    out = [
        np.zeros(
            (*data[0].shape[:-2], p.dst[1] - p.dst[0], p.dst[3] - p.dst[2]), dtype=data[0].dtype
        )
        for p in plans
    ]
    for r, plan in enumerate(plans):
        for peer, box in plan.sends:
            out[peer][(..., *_local(box, plans[peer].dst))] = data[r][(..., *_local(box, plan.src))]
    return out


class Reshape:
    """A reshape plan bound to a communicator: plan once, execute every call."""

    def __init__(self, comm, src: list[Box], dst: list[Box], alltoall: bool) -> None:
        self.comm = comm
        self.plan = plan_reshape(src, dst, comm.Get_rank())
        self.alltoall = alltoall

    def __call__(self, data: np.ndarray) -> np.ndarray:
        """``data`` (..., src box) -> (..., dst box), complex128."""
        from mpi4py import MPI

        plan, lead = self.plan, data.shape[:-2]
        per = int(np.prod(lead)) if lead else 1
        out = np.empty((*lead, plan.dst[1] - plan.dst[0], plan.dst[3] - plan.dst[2]), np.complex128)
        if self.alltoall:
            size = self.comm.Get_size()
            scount = np.zeros(size, np.int64)
            rcount = np.zeros(size, np.int64)
            chunks = []
            for peer, box in plan.sends:
                chunk = np.ascontiguousarray(data[(..., *_local(box, plan.src))], np.complex128)
                scount[peer] = chunk.size
                chunks.append(chunk.ravel())
            sbuf = np.concatenate(chunks) if chunks else np.empty(0, np.complex128)
            for peer, box in plan.recvs:
                rcount[peer] = per * (box[1] - box[0]) * (box[3] - box[2])
            sdisp = np.concatenate(([0], np.cumsum(scount)[:-1]))
            rdisp = np.concatenate(([0], np.cumsum(rcount)[:-1]))
            rbuf = np.empty(int(rcount.sum()), np.complex128)
            self.comm.Alltoallv(
                [sbuf, (scount, sdisp), MPI.C_DOUBLE_COMPLEX],
                [rbuf, (rcount, rdisp), MPI.C_DOUBLE_COMPLEX],
            )
            for peer, box in plan.recvs:
                shape = (*lead, box[1] - box[0], box[3] - box[2])
                piece = rbuf[rdisp[peer] : rdisp[peer] + rcount[peer]].reshape(shape)
                out[(..., *_local(box, plan.dst))] = piece
            return out
        reqs, bufs = [], []
        for peer, box in plan.recvs:
            buf = np.empty((*lead, box[1] - box[0], box[3] - box[2]), np.complex128)
            bufs.append((box, buf))
            reqs.append(self.comm.Irecv(buf, source=peer, tag=71))
        sends = []
        for peer, box in plan.sends:
            chunk = np.ascontiguousarray(data[(..., *_local(box, plan.src))], np.complex128)
            sends.append(chunk)
            reqs.append(self.comm.Isend(chunk, dest=peer, tag=71))
        MPI.Request.Waitall(reqs)
        for box, buf in bufs:
            out[(..., *_local(box, plan.dst))] = buf
        return out


def _fft_axis(a: np.ndarray, axis: int, inverse: bool, reorder: bool) -> np.ndarray:
    """1-D FFTs along mesh axis ``axis`` (0 or 1) of a (..., n1, n2) array."""
    fn = np.fft.ifft if inverse else np.fft.fft
    axis = axis - 2
    if not reorder:
        return fn(a, axis=axis)
    # heFFTe's reorder: make the transformed axis contiguous, transform, put it back.
    moved = np.ascontiguousarray(np.moveaxis(a, axis, -1))
    return np.moveaxis(fn(moved, axis=-1), -1, axis)


class DistributedRiesz:
    """Re[R1 w1 + R2 w2] of a block-decomposed (2, ni, nj) field over MPI.

    Two forward complex FFTs (batched), the Riesz multiplier, one inverse, as Beatnik.
    """

    def __init__(
        self, comm, blocks: list[Box], dims: tuple[int, int], n: tuple[int, int], config: int
    ) -> None:
        knobs = config_knobs(config)
        self.reorder = knobs["reorder"]
        rank, size = comm.Get_rank(), comm.Get_size()
        px, py = dims
        bi, bj = divmod(rank, py)
        n1, n2 = n
        a2a = knobs["alltoall"]
        if knobs["pencils"]:
            # x-pencils inside each column of the rank grid (same bj), y-pencils in each row.
            col = comm.Split(bj, bi)
            row = comm.Split(bi, bj)
            col_blocks = [blocks[k * py + bj] for k in range(px)]
            row_blocks = [blocks[bi * py + k] for k in range(py)]
            xp = [(0, n1, *block_bounds_range(b[2], b[3], px, k)) for k, b in enumerate(col_blocks)]
            yp = [(*block_bounds_range(b[0], b[1], py, k), 0, n2) for k, b in enumerate(row_blocks)]
            self.stages = [
                (Reshape(col, col_blocks, xp, a2a), 0),
                (Reshape(col, xp, col_blocks, a2a), None),
                (Reshape(row, row_blocks, yp, a2a), 1),
            ]
            self.back = [Reshape(row, yp, row_blocks, a2a)]
            self.spec_box = yp[bj]
            self._comms = (col, row)
        else:
            xs = [(0, n1, *block_bounds(n2, size, r)) for r in range(size)]
            ys = [(*block_bounds(n1, size, r), 0, n2) for r in range(size)]
            self.stages = [(Reshape(comm, blocks, xs, a2a), 0), (Reshape(comm, xs, ys, a2a), 1)]
            self.back = [Reshape(comm, ys, xs, a2a), Reshape(comm, xs, blocks, a2a)]
            self.spec_box = ys[rank]
            self._comms = ()
        self.pencils = knobs["pencils"]
        b = self.spec_box
        m1, m2 = riesz_multipliers(wavenumbers(n1)[b[0] : b[1]], wavenumbers(n2)[b[2] : b[3]])
        self.m1, self.m2 = m1, m2

    def __call__(self, w: np.ndarray) -> np.ndarray:
        a = w.astype(np.complex128)
        for reshape, axis in self.stages:
            a = reshape(a)
            if axis is not None:
                a = _fft_axis(a, axis, False, self.reorder)
        hat = self.m1 * a[0] + self.m2 * a[1]
        # inverse: y first (the data is in y-pencils / y-slabs), then x.
        hat = _fft_axis(hat, 1, True, self.reorder)
        if self.pencils:
            hat = self.back[0](hat)
            # back in blocks; x-transform inside the column again
            hat = self.stages[0][0](hat)
            hat = _fft_axis(hat, 0, True, self.reorder)
            hat = self.stages[1][0](hat)
        else:
            hat = self.back[0](hat)
            hat = _fft_axis(hat, 0, True, self.reorder)
            hat = self.back[1](hat)
        return hat.real

    def free(self) -> None:
        """Free the sub-communicators."""
        for c in self._comms:
            c.Free()


def block_bounds_range(lo: int, hi: int, parts: int, index: int) -> tuple[int, int]:
    """Sub-range ``index`` of ``[lo, hi)`` split in ``parts``."""
    a, b = block_bounds(hi - lo, parts, index)
    return lo + a, lo + b


# ------------------------------------------------------------------ patterns for the simulator
def _boxes_area(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Overlap areas (P, P) of boxes src[a] and dst[b], arrays (P, 4) of (i0, i1, j0, j1)."""
    di = np.minimum(src[:, None, 1], dst[None, :, 1]) - np.maximum(src[:, None, 0], dst[None, :, 0])
    dj = np.minimum(src[:, None, 3], dst[None, :, 3]) - np.maximum(src[:, None, 2], dst[None, :, 2])
    return np.clip(di, 0, None) * np.clip(dj, 0, None)


def riesz_patterns(config: int, ranks: int, n: int) -> list[np.ndarray]:
    """Communication matrices (bytes, (P, P), diagonal = kept locally) of the reshapes of one
    Riesz transform (two forward FFTs batched, one inverse) by :class:`DistributedRiesz`
    with heFFTe configuration ``config`` on ``ranks`` ranks and an n x n mesh, in order."""
    px, py = dims_create(ranks)
    r = np.arange(ranks)
    bi, bj = r // py, r % py
    ib = np.array([block_bounds(n, px, b) for b in range(px)])
    jb = np.array([block_bounds(n, py, b) for b in range(py)])
    blocks = np.column_stack((ib[bi], jb[bj]))
    full = np.zeros(ranks, np.int64)
    if config_knobs(config)["pencils"]:
        sub_j = np.array(
            [block_bounds_range(jb[bj[k]][0], jb[bj[k]][1], px, bi[k]) for k in range(ranks)]
        )
        sub_i = np.array(
            [block_bounds_range(ib[bi[k]][0], ib[bi[k]][1], py, bj[k]) for k in range(ranks)]
        )
        xp = np.column_stack((full, full + n, sub_j))
        yp = np.column_stack((sub_i, full, full + n))
        steps = [
            (blocks, xp, 2),
            (xp, blocks, 2),
            (blocks, yp, 2),
            (yp, blocks, 1),
            (blocks, xp, 1),
            (xp, blocks, 1),
        ]
    else:
        xs = np.column_stack((full, full + n, [block_bounds(n, ranks, k) for k in r]))
        ys = np.column_stack(([block_bounds(n, ranks, k) for k in r], full, full + n))
        steps = [(blocks, xs, 2), (xs, ys, 2), (ys, xs, 1), (xs, blocks, 1)]
    return [_boxes_area(a, b) * (16 * comps) for a, b, comps in steps]
