"""Where the grid halo messages of one rank live: its inboxes and outboxes, planned once.

Every grid exchange (phase ``k``) has, on each rank, two inboxes used on alternate rounds
(round ``n`` of the phase reads inbox ``n % 2``) holding one message from each source rank at
a place fixed by the plan (:func:`~grapeshot.runtime.halo_plan.message_layout`), and an
outbox for the messages to other ranks. Two inboxes let a neighbour that is a phase ahead
write round ``n + 1`` while this rank still reads round ``n``: a rank writes round ``n`` of
phase ``k`` only after finishing round ``n - 1`` of it, which needed this rank's round ``n - 1``
message, sent only once this rank was done reading round ``n - 2``.

All of it lies in one region per rank. Between the ranks of one node the regions are an MPI-3
shared-memory window (``MPI_Win_allocate_shared``): a rank writes its messages to a node
neighbour straight into that neighbour's inbox, and the last word of the message's header, its
news (:mod:`grapeshot.model.news`), written last, tells the neighbour it is whole: no MPI
message follows. No rank then copies a message from another process's memory: the sender's
gather (or its tasks' packing) is the only copy. Messages to other nodes travel as MPI messages out
of the outbox into the receiver's inbox.

:class:`Mailboxes` gives every byte it holds as offsets into one array, ``space`` (the node's
whole window, or this rank's region alone), so that compiled tasks can pack into any
neighbour's inbox through one table (:mod:`grapeshot.model.task_halos`).
"""

from __future__ import annotations

import ctypes

import numpy as np

from grapeshot.runtime.halo_plan import Arena, GridPlan, RankLinks, message_layout

#: Regions start on cache lines, so that two ranks never write one line.
_ALIGN = 64


def _aligned(n: int) -> int:
    return n + (-n) % _ALIGN


class Mailboxes:
    """The inboxes and outboxes of one rank's grid exchanges (see the module docstring).

    Parameters
    ----------
    comm
        The runtime's data communicator (collective: every rank builds its own at once).
    plans
        ``{phase: GridPlan}`` of this rank.
    arena, links
        The rank's arena and links (message sizes and partners).
    header_bytes
        Bytes of a message's header before its payload.
    shared
        Whether ranks of one node share their regions (``False``: every message is an MPI
        message, as between nodes).
    previous
        The mailboxes of the placement before (a rebalance; every rank of the node passes
        its own or none): their node communicator and their region are taken over where the
        new layout fits in every rank's region, instead of a new window (a split, an
        allocation, a free: collectives that were a tenth of a moving rebalance's pause).
        ``previous`` is left closed.
    """

    def __init__(
        self,
        comm,
        plans: dict[int, GridPlan],
        arena: Arena,
        links: RankLinks,
        header_bytes: int,
        shared: bool = True,
        previous: Mailboxes | None = None,
    ) -> None:
        self.rank = comm.Get_rank()
        self.header = header_bytes
        #: The messages' views of :attr:`space`, made on first use (:meth:`received`,
        #: :meth:`outgoing`): a phase's round asks for the same ones every step.
        self._views: dict[tuple, np.ndarray] = {}
        self.win = self.node = None
        #: Bytes of this rank's region (its share of the window), what a re-plan may reuse.
        self.capacity = 0
        self.shared_peers: set[int] = set()
        if previous is not None and previous.node is not None:
            self.node, self.shared_peers = previous.node, previous.shared_peers
            previous.node = None
        elif shared and comm.Get_size() > 1:
            from mpi4py import MPI

            self.node = comm.Split_type(MPI.COMM_TYPE_SHARED)
            self.shared_peers = set(self.node.allgather(self.rank)) - {self.rank}
        #: ``{rank: {phase: payload bytes}}`` of the messages from and to each partner.
        self.size_in = {r: {k: p.message_bytes(False, arena, r) for k, p in plans.items()}
                        for r in links.sources}  # fmt: skip
        self.size_out = {r: {k: p.message_bytes(True, arena, r) for k, p in plans.items()}
                         for r in links.send_links}  # fmt: skip
        # This rank's region: per phase, inbox 0, inbox 1, then the outbox for other nodes.
        offnode = [r for r in links.send_links if r not in self.shared_peers]
        self.in_starts: dict[int, dict[int, int]] = {}
        self.in_total: dict[int, int] = {}
        self.out_starts: dict[int, dict[int, int]] = {}
        self.layout: dict[int, tuple[int, int]] = {}  # phase -> (inbox 0, outbox) offsets
        at = 0
        for k, plan in sorted(plans.items()):
            starts, total = message_layout(plan, False, arena, links.sources, header_bytes)
            out, out_total = message_layout(plan, True, arena, offnode, header_bytes)
            total = _aligned(total)
            self.in_starts[k], self.in_total[k], self.out_starts[k] = starts, total, out
            self.layout[k] = (at, at + 2 * total)
            at += 2 * total + _aligned(out_total)
        nbytes = max(at, _ALIGN)
        told = None
        if previous is not None and previous.win is not None:
            # Zeroed before the node's exchange below, past which a neighbour may write its
            # messages to this rank: no old news word reads as a new round's
            # (grapeshot.model.news).
            previous.space[previous.mine : previous.mine + previous.capacity] = 0
        if self.shared_peers:
            # One exchange on the node: whether each rank's layout fits its region of the
            # window before, and where each one's inboxes lie in its region.
            fits = previous is not None and previous.win is not None and nbytes <= previous.capacity
            boxes = {k: (self.layout[k][0], self.in_total[k], self.in_starts[k]) for k in plans}
            told = self.node.allgather((self.rank, fits, boxes, self.size_in))
        self.space = self._allocate(nbytes, previous, told)
        self.mine = self.regions[self.rank]
        # Where this rank's messages go in ``space``: node neighbours' inboxes, or its outbox.
        self.dest: dict[tuple[int, int, int], int] = {}
        for k in plans:
            outbox = self.mine + self.layout[k][1]
            for r in offnode:
                for parity in (0, 1):
                    self.dest[(k, parity, r)] = outbox + self.out_starts[k][r]
        for peer, _, boxes, sizes in told or ():
            if peer not in self.shared_peers or peer not in links.send_links:
                continue
            for k, (start, total, starts) in boxes.items():
                if sizes[self.rank][k] != self.size_out[peer][k]:
                    raise RuntimeError(
                        f"rank {self.rank} and rank {peer} disagree on the size of their "
                        f"phase {k} message: {self.size_out[peer][k]} vs "
                        f"{sizes[self.rank][k]} B"
                    )
                at = self.regions[peer] + start + starts[self.rank]
                for parity in (0, 1):
                    self.dest[(k, parity, peer)] = at + parity * total

    def _allocate(self, nbytes: int, previous: Mailboxes | None, told: list | None) -> np.ndarray:
        """The space: ``previous``'s where every rank's layout fits in its region (``told``,
        the node's, says), else a new one; :attr:`regions` says where each rank's region
        starts in it."""
        if previous is not None and previous.win is not None:
            if all(fits for _, fits, _, _ in told):  # type: ignore[union-attr]
                self.win, self.capacity = previous.win, previous.capacity
                space, self.regions = previous.space, previous.regions
                previous.win, previous.space = None, np.zeros(0, dtype=np.uint8)
                return space
            previous.close()
        elif previous is not None and not self.shared_peers and previous.capacity >= nbytes:
            space, self.capacity = previous.space, previous.capacity
            previous.space = np.zeros(0, dtype=np.uint8)
            space[:] = 0
            self.regions = {self.rank: 0}
            return space
        if not self.shared_peers:
            self.capacity = nbytes
            self.regions = {self.rank: 0}
            return np.zeros(nbytes, dtype=np.uint8)
        from mpi4py import MPI

        # Room to grow: a rebalance that moves a few partitions changes the sizes a little,
        # and a region that fits is taken over (``previous``).
        self.capacity = nbytes + nbytes // 4
        self.win = MPI.Win.Allocate_shared(self.capacity, 1, comm=self.node)
        self.win.Lock_all(MPI.MODE_NOCHECK)
        spans = [self.win.Shared_query(r)[0] for r in range(self.node.Get_size())]
        # Zeroed before the collective below, past which a neighbour may write to it.
        np.frombuffer(spans[self.node.Get_rank()], dtype=np.uint8)[:] = 0
        bases = [s.address for s in spans]
        ends = [s.address + len(s) for s in spans]
        # The standard lays a shared window's regions out one after the other; a view of the
        # whole node's window needs it.
        contiguous = all(bases[i + 1] >= ends[i] for i in range(len(bases) - 1))
        if not self.node.allreduce(contiguous, op=MPI.LAND):
            raise RuntimeError("the node's shared-memory window is not contiguous")
        span = ends[-1] - bases[0]
        #: ``{rank: where its region starts in space}`` of the ranks of this node.
        self.regions = {
            rank: base - bases[0]
            for (rank, *_), base in zip(told, bases, strict=True)  # type: ignore[arg-type]
        }
        return np.ctypeslib.as_array((ctypes.c_uint8 * span).from_address(bases[0]))

    def _inbox_at(self, k: int, parity: int) -> int:
        """Where inbox ``parity`` of phase ``k`` starts in :attr:`space`, bytes."""
        return self.mine + self.layout[k][0] + parity * self.in_total[k]

    def inbox(self, k: int, parity: int) -> np.ndarray:
        """Inbox ``parity`` of phase ``k`` (uint8; messages at :attr:`in_starts`)."""
        start = self._inbox_at(k, parity)
        return self.space[start : start + self.in_total[k]]

    def received_at(self, k: int, parity: int, source: int) -> int:
        """Where the message from ``source`` in inbox ``parity`` of phase ``k`` starts in
        :attr:`space`, bytes."""
        return self._inbox_at(k, parity) + self.in_starts[k][source]

    def received(self, k: int, parity: int, source: int) -> np.ndarray:
        """The message from ``source`` in inbox ``parity`` of phase ``k`` (header, payload)."""
        key = ("in", k, parity, source)
        view = self._views.get(key)
        if view is None:  # made once: every round of the phase reads it again
            start = self.in_starts[k][source]
            end = start + self.header + self.size_in[source][k]
            view = self._views[key] = self.inbox(k, parity)[start:end]
        return view

    def outgoing(self, k: int, parity: int, dest: int) -> np.ndarray:
        """Where this rank writes its phase ``k`` message of round parity ``parity`` to
        ``dest`` (uint8, header and payload)."""
        key = ("out", k, parity, dest)
        view = self._views.get(key)
        if view is None:
            start = self.dest[(k, parity, dest)]
            end = start + self.header + self.size_out[dest][k]
            view = self._views[key] = self.space[start:end]
        return view

    def outgoing_starts(self, k: int, parity: int) -> dict[int, int]:
        """``{dest: byte offset in space}`` of phase ``k``'s messages of parity ``parity``."""
        return {r: at for (kk, p, r), at in self.dest.items() if kk == k and p == parity}

    def close(self) -> None:
        """Free the window (collective on the node); :attr:`space` is gone after."""
        self._views.clear()
        if self.win is not None:
            self.space = np.zeros(0, dtype=np.uint8)
            self.win.Unlock_all()
            self.win.Free()
            self.win = None
        if self.node is not None:
            self.node.Free()
            self.node = None
