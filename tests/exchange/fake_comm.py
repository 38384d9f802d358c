"""A one-process stand-in for an MPI communicator: ``n`` ranks as threads (tests only).

Issue 11 allows a fake communicator for exactly one test: many hypothesis patterns through
every exchange algorithm in one process. It implements the calls
:mod:`grapeshot.exchange.mpi_exchange` makes, with MPI's matching rules: receives match
messages in the order they were posted, messages from one source on one tag arrive in order
(non-overtaking), ``Issend`` completes only once matched, collectives rendezvous.
Sends are buffered (a copy is taken at once), which MPI allows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
from mpi4py import MPI

TIMEOUT = 30.0


class _Msg:
    __slots__ = ("data", "matched", "src", "tag")

    def __init__(self, src, tag, data):
        self.src, self.tag, self.data, self.matched = src, tag, data, False


class _Req:
    def __init__(self, world, done: Callable[[], bool], finish: Callable[[], None] | None = None):
        self.world, self._done, self._finish, self._final = world, done, finish, False

    def Test(self) -> bool:
        with self.world.cond:
            return self._check()

    def _check(self) -> bool:
        if self._final:
            return True
        self.world.match_all()
        if self._done():
            if self._finish:
                self._finish()
            self._final = True
        return self._final

    def Wait(self) -> None:
        with self.world.cond:
            if not self.world.cond.wait_for(self._check, timeout=TIMEOUT):
                raise TimeoutError("fake MPI request never completed (deadlock?)")


class _Posted:
    __slots__ = ("buf", "msg", "src", "tag")

    def __init__(self, src, tag, buf):
        self.src, self.tag, self.buf, self.msg = src, tag, buf, None


class FakeWorld:
    """Shared state of ``n`` fake ranks."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.cond = threading.Condition()
        self.queues: dict[tuple, list[_Msg]] = {}  # (context, dst) -> unexpected messages
        self.posted: dict[tuple, list[_Posted]] = {}  # (context, dst) -> posted receives
        self.coll: dict[tuple, dict[int, object]] = {}  # (context, generation) -> deposits
        self.busy = np.full(n, -1, dtype=np.int64)

    def match_all(self) -> None:
        """Match posted receives to queued messages, in posting order (lock held)."""
        for key, posted in self.posted.items():
            queue = self.queues.get(key, [])
            for p in list(posted):
                for m in queue:
                    if (p.src in (MPI.ANY_SOURCE, m.src)) and p.tag == m.tag:
                        if m.data.nbytes > p.buf.nbytes:
                            raise RuntimeError("fake MPI: message truncated")
                        p.buf[: m.data.size] = m.data
                        m.matched = True
                        p.msg = m
                        queue.remove(m)
                        posted.remove(p)
                        break

    def comms(self) -> list[FakeComm]:
        return [FakeComm(self, r, ("world",)) for r in range(self.n)]

    def run(self, fn: Callable[[FakeComm], object]) -> list[object]:
        """Run ``fn(comm)`` on every rank in threads; return the results; re-raise errors."""
        results: list[object] = [None] * self.n
        errors: list[BaseException] = []

        def body(c):
            try:
                results[c.Get_rank()] = fn(c)
            except BaseException as exc:
                errors.append(exc)
                with self.cond:
                    self.cond.notify_all()

        threads = [threading.Thread(target=body, args=(c,)) for c in self.comms()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(TIMEOUT * 4)
        if errors:
            raise errors[0]
        return results


class _Message:
    def __init__(self, msg: _Msg) -> None:
        self.msg = msg

    def Recv(self, buf) -> None:
        buf[: self.msg.data.size] = self.msg.data


class FakeComm:
    """One rank's view; ``context`` separates duplicated communicators."""

    def __init__(self, world: FakeWorld, rank: int, context: tuple) -> None:
        self.world, self.rank, self.context = world, rank, context
        self._dups = 0
        self._gen = 0
        self.size = world.n

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.world.n

    def Dup(self) -> FakeComm:
        self._dups += 1
        return FakeComm(self.world, self.rank, (*self.context, "dup", self._dups))

    def Free(self) -> None:
        pass

    # point to point
    def _send(self, buf, dest, tag) -> _Msg:
        data = np.array(np.asarray(buf).view(np.uint8).reshape(-1), copy=True)
        msg = _Msg(self.rank, tag, data)
        with self.world.cond:
            self.world.queues.setdefault((self.context, dest), []).append(msg)
            self.world.match_all()
            self.world.cond.notify_all()
        return msg

    def Isend(self, buf, dest, tag=0) -> _Req:
        self._send(buf, dest, tag)
        return _Req(self.world, lambda: True)

    def Send(self, buf, dest, tag=0) -> None:
        self._send(buf, dest, tag)

    def Issend(self, buf, dest, tag=0) -> _Req:
        msg = self._send(buf, dest, tag)
        return _Req(self.world, lambda: msg.matched)

    def Irecv(self, buf, source=MPI.ANY_SOURCE, tag=0, status=None) -> _Req:
        view = np.asarray(buf).view(np.uint8).reshape(-1)
        p = _Posted(source, tag, view)
        with self.world.cond:
            self.world.posted.setdefault((self.context, self.rank), []).append(p)
            self.world.match_all()

        def finish():
            if status is not None:
                status.Set_source(p.msg.src)
                status.Set_elements(MPI.BYTE, p.msg.data.size)

        return _Req(self.world, lambda: p.msg is not None, finish)

    def Recv(self, buf, source=MPI.ANY_SOURCE, tag=0, status=None) -> None:
        self.Irecv(buf, source, tag, status).Wait()

    def Improbe(self, source=MPI.ANY_SOURCE, tag=0, status=None):
        with self.world.cond:
            self.world.match_all()
            queue = self.world.queues.get((self.context, self.rank), [])
            for m in queue:
                if source in (MPI.ANY_SOURCE, m.src) and m.tag == tag:
                    queue.remove(m)
                    m.matched = True
                    self.world.cond.notify_all()
                    if status is not None:
                        status.Set_source(m.src)
                        status.Set_elements(MPI.BYTE, m.data.size)
                    return _Message(m)
        return None

    # collectives: deposit, wait for everyone, read
    def _collective(self, value) -> dict[int, object]:
        key = (self.context, self._gen)
        self._gen += 1
        with self.world.cond:
            box = self.world.coll.setdefault(key, {})
            box[self.rank] = value
            self.world.cond.notify_all()
            if not self.world.cond.wait_for(lambda: len(box) == self.world.n, timeout=TIMEOUT):
                raise TimeoutError("fake MPI collective never completed")
            return dict(box)

    def Ibarrier(self) -> _Req:
        key = (self.context, self._gen)
        self._gen += 1
        with self.world.cond:
            box = self.world.coll.setdefault(key, {})
            box[self.rank] = None
            self.world.cond.notify_all()
        return _Req(self.world, lambda: len(box) == self.world.n)

    def Barrier(self) -> None:
        self._collective(None)

    def Allgather(self, send, recv) -> None:
        box = self._collective(np.array(send, copy=True))
        recv[...] = np.stack([box[r] for r in range(self.world.n)]).reshape(recv.shape)

    def Reduce_scatter_block(self, send, recv, op=MPI.SUM) -> None:
        assert op == MPI.SUM
        box = self._collective(np.array(send, copy=True))
        total = np.sum([box[r] for r in range(self.world.n)], axis=0)
        k = recv.size
        recv[...] = total[self.rank * k : (self.rank + 1) * k]

    def Allreduce(self, send, recv, op=MPI.SUM) -> None:
        box = self._collective(np.array(send, copy=True))
        vals = np.stack([box[r] for r in range(self.world.n)])
        recv[...] = vals.max(axis=0) if op == MPI.MAX else vals.sum(axis=0)

    def Alltoallv(self, send, recv) -> None:
        sbuf, (sc, sd) = send
        rbuf, (rc, rd) = recv
        box = self._collective((np.array(sbuf, copy=True), np.array(sc), np.array(sd)))
        for src in range(self.world.n):
            b, c, d = box[src]
            count = int(c[self.rank])
            assert count == int(rc[src])
            rbuf[rd[src] : rd[src] + count] = b[d[self.rank] : d[self.rank] + count]

    def Create_dist_graph_adjacent(self, sources, destinations, reorder=False) -> FakeGraph:
        return FakeGraph(self.Dup(), list(sources), list(destinations))


class FakeGraph:
    """A distributed-graph communicator: ``Neighbor_alltoallv`` only."""

    def __init__(self, comm: FakeComm, sources: list[int], destinations: list[int]) -> None:
        self.comm, self.sources, self.destinations = comm, sources, destinations

    def Neighbor_alltoallv(self, send, recv) -> None:
        sbuf, (sc, sd) = send
        rbuf, (rc, rd) = recv
        box = self.comm._collective(
            (np.array(sbuf, copy=True), np.array(sc), np.array(sd), self.destinations)
        )
        for k, src in enumerate(self.sources):
            b, c, d, dests = box[src]
            at = dests.index(self.comm.rank)
            assert int(c[at]) == int(rc[k])
            rbuf[rd[k] : rd[k] + rc[k]] = b[d[at] : d[at] + c[at]]

    def Free(self) -> None:
        pass


class FakeBusyBits:
    """DRS_N's busy words in shared memory, test-and-set under the world's lock."""

    def __init__(self, world: FakeWorld, rank: int) -> None:
        self.world, self.rank = world, rank
        self.tries = 0

    def try_acquire(self, target: int) -> bool:
        with self.world.cond:
            self.tries += 1
            if self.world.busy[target] == -1:
                self.world.busy[target] = self.rank
                return True
            return False

    def release(self, target: int) -> None:
        with self.world.cond:
            assert self.world.busy[target] == self.rank
            self.world.busy[target] = -1
            self.world.cond.notify_all()

    def free(self) -> None:
        pass
