"""Run an all-to-many exchange on MPI: a persistent :class:`ExchangePlan`, planned once.

Algorithms (:data:`grapeshot.exchange.schedules.ALGORITHMS`):

``ac``         post every receive, then ``Isend`` every message in a random order (figure 2).
``lp``, ``rsn``, ``rsnh``
               phase by phase from the schedule table every rank computes identically from COM
               (gathered once by ``Allgather``): ``Irecv``/``Isend`` the phase's pieces, wait.
``drsn``       no table: receives are posted from the receiving vector (figure 1), then each
               sender reserves a receiver by a remote test-and-set of its busy word (MPI-3
               ``Compare_and_swap`` under a passive-target ``Lock_all`` epoch), sends, and
               frees it (``Fetch_and_op`` REPLACE); a busy receiver is skipped for now.
``nbx``        Hoefler et al. 2010: ``Issend`` everything, receive whatever ``Improbe`` finds,
               enter ``Ibarrier`` once the own sends are matched, stop when it completes. Tags
               alternate between runs so a fast rank's next run cannot be swallowed.
``alltoallv``  ``MPI_Alltoallv`` in rounds of at most ``max_chunk`` bytes per pair.
``neighbor``   ``MPI_Neighbor_alltoallv`` on a distributed-graph communicator of the pattern.

Every message is cut into pieces of at most ``max_chunk`` bytes
(:func:`grapeshot.exchange.payload.chunks`), so no count exceeds 32 bits. The plan owns a
duplicate of the communicator (its tags cannot meet the application's).

Only requests' ``Wait``/``Test`` and the communicator methods are used, so the one-process
fake communicator of the tests can stand in for MPI.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from grapeshot.exchange.mpi_recv import recv_concat, recv_reduce_scatter
from grapeshot.exchange.payload import MAX_CHUNK, chunks
from grapeshot.exchange.schedules import ALGORITHMS, make_schedule

TAG_DATA = 9_101
TAG_NBX = (9_102, 9_103)
#: Largest signed 32-bit count.
INT_MAX = 2**31 - 1


class RmaBusyBits:
    """One busy word per rank in an MPI-3 window; remote test-and-set and reset.

    The word holds ``-1`` when the rank is free to receive, else the rank of the sender
    holding it. The window stays in one passive-target ``Lock_all`` epoch for its life
    (atomics are atomic under shared locks).
    """

    def __init__(self, comm) -> None:
        from mpi4py import MPI

        self._mpi = MPI
        self.rank = comm.Get_rank()
        self.win = MPI.Win.Allocate(8, disp_unit=8, comm=comm)
        mem = np.frombuffer(self.win.tomemory(), dtype=np.int64)
        mem[0] = -1
        comm.Barrier()  # every word is -1 before anyone targets it
        self.win.Lock_all()
        self._origin = np.array([self.rank], dtype=np.int64)
        self._free = np.array([-1], dtype=np.int64)
        self._result = np.empty(1, dtype=np.int64)

    def try_acquire(self, target: int) -> bool:
        """Compare-and-swap ``target``'s word from -1 to this rank; True if it was free."""
        self.win.Compare_and_swap(self._origin, self._free, self._result, target, 0)
        self.win.Flush(target)
        return bool(self._result[0] == -1)

    def release(self, target: int) -> None:
        """Set ``target``'s word back to -1."""
        self.win.Fetch_and_op(self._free, self._result, target, 0, op=self._mpi.REPLACE)
        self.win.Flush(target)

    def free(self) -> None:
        """Close the epoch and free the window (collective)."""
        self.win.Unlock_all()
        self.win.Free()


class _Round:
    """One round of a collective exchange, planned once: 32-bit counts and displacements, and
    where each piece comes from and goes to in the packed buffers."""

    __slots__ = ("packs", "rc", "rd", "recv_bytes", "sc", "sd", "send_bytes", "unpacks")

    @classmethod
    def plan(cls, sizes_out, sizes_in, peers_out, peers_in, lo: int, step: int) -> _Round:
        """The round covering bytes ``lo .. lo + step`` of every message."""
        rnd = cls()
        sc = np.clip(np.asarray(sizes_out, np.int64) - lo, 0, step)
        rc = np.clip(np.asarray(sizes_in, np.int64) - lo, 0, step)
        sd = np.cumsum(sc) - sc
        rd = np.cumsum(rc) - rc
        rnd.sc, rnd.sd, rnd.rc, rnd.rd = (x.astype(np.int32) for x in (sc, sd, rc, rd))
        rnd.send_bytes, rnd.recv_bytes = int(sc.sum()), int(rc.sum())
        rnd.packs = [
            (int(j), lo, int(a), int(n)) for j, a, n in zip(peers_out, sd, sc, strict=True) if n
        ]
        rnd.unpacks = [
            (int(i), lo, int(a), int(n)) for i, a, n in zip(peers_in, rd, rc, strict=True) if n
        ]
        return rnd


def _yield() -> None:
    """Give the core away between polls: where ranks share cores (oversubscribed hosts) a
    polling loop would otherwise keep the rank it waits for off the CPU for a time slice."""
    os.sched_yield()


def _waitall(reqs: list) -> None:
    for r in reqs:
        r.Wait()


class ExchangePlan:
    """Plan once (Generate_Recv, schedule, graph communicator, RMA window), run many times.

    Parameters
    ----------
    sendl
        ``(n,)`` int64: bytes this rank sends to each rank (its row of COM).
    comm
        The communicator (duplicated; the plan frees its copy in :meth:`free`).
    algorithm
        One of :data:`grapeshot.exchange.schedules.ALGORITHMS`.
    seed
        Seed of the random choices (the same on every rank, so tables agree).
    max_chunk
        Largest piece of a message per MPI call, bytes.
    busy_bits
        DRS_N only: an object with ``try_acquire(rank) -> bool``, ``release(rank)``, ``free()``;
        default :class:`RmaBusyBits` on the plan's communicator.
    """

    def __init__(
        self,
        sendl: np.ndarray,
        *,
        comm,
        algorithm: str,
        seed: int = 0,
        max_chunk: int = MAX_CHUNK,
        busy_bits: Any = None,
    ) -> None:
        if algorithm not in ALGORITHMS:
            raise ValueError(f"unknown exchange algorithm {algorithm!r}; one of {ALGORITHMS}")
        if not 1 <= int(max_chunk) <= INT_MAX:
            raise ValueError(f"max_chunk must be in [1, 2**31 - 1], got {max_chunk}")
        t0 = time.perf_counter()
        self.comm = comm.Dup()
        self.algorithm = algorithm
        self.seed = int(seed)
        self.max_chunk = int(max_chunk)
        self.rank, self.n = self.comm.Get_rank(), self.comm.Get_size()
        self.sendl = np.ascontiguousarray(sendl, dtype=np.int64).copy()
        if self.sendl.shape != (self.n,) or (self.sendl < 0).any() or self.sendl[self.rank]:
            raise ValueError("sendl must be (n,) bytes >= 0 with nothing to this rank")
        self.n_phases = 0
        self.tries = 0
        self._epoch = 0
        self._busy = None
        self._graph = None
        self.phases: list[tuple[list, list]] = []
        if algorithm in ("lp", "rsn", "rsnh"):
            com = recv_concat(self.sendl, comm=self.comm)
            self.recvl = com[:, self.rank].copy()
            sched = make_schedule(com, algorithm, seed=self.seed)
            self.n_phases = sched.n_phases
            sends = [[] for _ in range(sched.n_phases)]
            recvs = [[] for _ in range(sched.n_phases)]
            for t in sched.sends_of(self.rank):
                sends[sched.phase[t]].append(
                    (int(sched.dst[t]), chunks(sched.offset[t], sched.nbytes[t], self.max_chunk))
                )
            for t in sched.recvs_of(self.rank):
                recvs[sched.phase[t]].append(
                    (int(sched.src[t]), chunks(sched.offset[t], sched.nbytes[t], self.max_chunk))
                )
            self.phases = [(s, r) for s, r in zip(sends, recvs, strict=True) if s or r]
        elif algorithm != "nbx":
            self.recvl = recv_reduce_scatter(self.sendl, comm=self.comm)
        else:
            self.recvl = None
        dests = np.flatnonzero(self.sendl)
        rng = np.random.default_rng((self.seed, self.rank))
        self.order = rng.permutation(dests).tolist()
        if algorithm == "ac":
            self.n_phases = len(self.order)
        if algorithm == "drsn":
            self._busy = busy_bits if busy_bits is not None else RmaBusyBits(self.comm)
        if algorithm in ("alltoallv", "neighbor"):
            # Every rank must run the same number of rounds: the largest message anywhere.
            biggest = np.array([self.sendl.max(initial=0)], dtype=np.int64)
            glob = np.empty(1, dtype=np.int64)
            from mpi4py import MPI

            self.comm.Allreduce(biggest, glob, op=MPI.MAX)
            # Per round, all of a rank's pieces share one buffer whose displacements are int.
            step = max(1, min(self.max_chunk, INT_MAX // max(self.n, 1)))
            self.n_phases = max(1, -(-int(glob[0]) // step))
            peers_out = peers_in = list(range(self.n))
            if algorithm == "neighbor":
                peers_in = np.flatnonzero(self.recvl).tolist()
                peers_out = dests.tolist()
                self._graph = self.comm.Create_dist_graph_adjacent(
                    peers_in, peers_out, reorder=False
                )
            self._collective_rounds = [
                _Round.plan(
                    self.sendl[peers_out], self.recvl[peers_in], peers_out, peers_in, lo, step
                )
                for lo in range(0, self.n_phases * step, step)
            ]
            # One pair of packed buffers, sized for the largest round, serves every round.
            self._packed = (
                np.empty(max(r.send_bytes for r in self._collective_rounds), np.uint8),
                np.empty(max(r.recv_bytes for r in self._collective_rounds), np.uint8),
            )
        self._recvbuf: dict[int, np.ndarray] = (
            {int(i): np.empty(int(self.recvl[i]), np.uint8) for i in np.flatnonzero(self.recvl)}
            if self.recvl is not None
            else {}
        )
        self.schedule_seconds = time.perf_counter() - t0

    # -- running ------------------------------------------------------------------------------

    def run(self, sends: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Deliver ``sends`` (``{dst: uint8 bytes}``, sizes as in ``sendl``).

        Returns ``{src: uint8 bytes}``. The arrays are the plan's receive buffers, overwritten
        by the next run (copy what must outlive it); NBX returns fresh arrays.
        """
        for j in np.flatnonzero(self.sendl):
            buf = sends.get(int(j))
            if buf is None or buf.nbytes != self.sendl[j]:
                raise ValueError(f"rank {self.rank}: message to {j} must hold {self.sendl[j]} B")
        bufs = {
            int(j): np.ascontiguousarray(sends[int(j)]).view(np.uint8).reshape(-1)
            for j in np.flatnonzero(self.sendl)
        }
        return getattr(self, f"_run_{self.algorithm}")(bufs)

    def _run_phases(self, bufs: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        comm = self.comm
        for sends, recvs in self.phases:
            reqs = []
            for src, pieces in recvs:
                rb = self._recvbuf[src]
                reqs += [comm.Irecv(rb[a : a + n], source=src, tag=TAG_DATA) for a, n in pieces]
            for dst, pieces in sends:
                sb = bufs[dst]
                reqs += [comm.Isend(sb[a : a + n], dest=dst, tag=TAG_DATA) for a, n in pieces]
            _waitall(reqs)
        return dict(self._recvbuf)

    _run_lp = _run_rsn = _run_rsnh = _run_phases

    def _post_recvs(self) -> list:
        reqs = []
        for src, rb in self._recvbuf.items():
            reqs += [
                self.comm.Irecv(rb[a : a + n], source=src, tag=TAG_DATA)
                for a, n in chunks(0, rb.size, self.max_chunk)
            ]
        return reqs

    def _run_ac(self, bufs: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        reqs = self._post_recvs()
        for dst in self.order:
            sb = bufs[dst]
            reqs += [
                self.comm.Isend(sb[a : a + n], dest=dst, tag=TAG_DATA)
                for a, n in chunks(0, sb.size, self.max_chunk)
            ]
        _waitall(reqs)
        return dict(self._recvbuf)

    def _run_drsn(self, bufs: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        recv_reqs = self._post_recvs()
        pending = list(self.order)
        busy = self._busy
        while pending:
            left = []
            for dst in pending:
                self.tries += 1
                if busy.try_acquire(dst):
                    sb = bufs[dst]
                    for a, n in chunks(0, sb.size, self.max_chunk):
                        self.comm.Send(sb[a : a + n], dest=dst, tag=TAG_DATA)
                    busy.release(dst)
                else:
                    left.append(dst)
            pending = left
            for r in recv_reqs:  # make progress on incoming messages (and RMA) while we wait
                r.Test()
            if pending:
                _yield()
        _waitall(recv_reqs)
        # Nobody may start the next run while a busy word is still held for this one.
        self.comm.Barrier()
        return dict(self._recvbuf)

    def _run_nbx(self, bufs: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        from mpi4py import MPI

        comm = self.comm
        tag = TAG_NBX[self._epoch % 2]
        self._epoch += 1
        reqs = []
        for dst in self.order:
            sb = bufs[dst]
            reqs += [
                comm.Issend(sb[a : a + n], dest=dst, tag=tag)
                for a, n in chunks(0, sb.size, self.max_chunk)
            ]
        pieces: dict[int, list[np.ndarray]] = {}
        status = MPI.Status()
        barrier = None
        while True:
            msg = comm.Improbe(source=MPI.ANY_SOURCE, tag=tag, status=status)
            if msg is not None:
                buf = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
                src = status.Get_source()
                msg.Recv(buf)
                pieces.setdefault(src, []).append(buf)
                continue
            if barrier is None:
                if all(r.Test() for r in reqs):
                    barrier = comm.Ibarrier()
            elif barrier.Test():
                break
            _yield()
        return {s: (p[0] if len(p) == 1 else np.concatenate(p)) for s, p in pieces.items()}

    def _rounds(self, bufs: dict[int, np.ndarray], call) -> dict[int, np.ndarray]:
        recv = self._recvbuf
        sbuf, rbuf = self._packed
        for rnd in self._collective_rounds:
            for j, lo, at, n in rnd.packs:
                sbuf[at : at + n] = bufs[j][lo : lo + n]
            call([sbuf, (rnd.sc, rnd.sd)], [rbuf, (rnd.rc, rnd.rd)])
            for i, lo, at, n in rnd.unpacks:
                recv[i][lo : lo + n] = rbuf[at : at + n]
        return dict(recv)

    def _run_alltoallv(self, bufs: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        return self._rounds(bufs, self.comm.Alltoallv)

    def _run_neighbor(self, bufs: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        return self._rounds(bufs, self._graph.Neighbor_alltoallv)

    def free(self) -> None:
        """Release the plan's MPI objects (collective)."""
        if self._busy is not None:
            self._busy.free()
            self._busy = None
        if self._graph is not None:
            self._graph.Free()
            self._graph = None
        self.comm.Free()


def tas_round_trip(*, comm, repeats: int = 200) -> float:
    """Mean seconds of one remote test-and-set + reset (DRS_N's reservation) to the next rank.

    Every rank times ``repeats`` acquire/release pairs on rank ``(rank + 1) % n`` at once.
    """
    bits = RmaBusyBits(comm)
    target = (comm.Get_rank() + 1) % comm.Get_size()
    comm.Barrier()
    t0 = time.perf_counter()
    done = 0
    while done < repeats:
        if bits.try_acquire(target):
            bits.release(target)
            done += 1
    elapsed = time.perf_counter() - t0
    comm.Barrier()
    bits.free()
    return elapsed / repeats


def exchange_once(
    sends: Mapping[int, np.ndarray], *, comm, algorithm: str, seed: int = 0
) -> dict[int, np.ndarray]:
    """Plan and run one exchange whose pattern holds only this once (e.g. particle migration).

    Collective over ``comm``. ``sends`` maps destination rank to uint8 bytes; returns
    ``{source: uint8 bytes}`` (arrays this call allocated, safe to keep).
    """
    sendl = np.zeros(comm.Get_size(), dtype=np.int64)
    for dst, buf in sends.items():
        sendl[int(dst)] = buf.nbytes
    plan = ExchangePlan(sendl, comm=comm, algorithm=algorithm, seed=seed)
    try:
        return plan.run(sends)
    finally:
        plan.free()
