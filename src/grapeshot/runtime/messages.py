"""One rank's point-to-point messages: posting, receiving by round, and the grid exchanges'
planned receives and sends through the mailboxes.

Two kinds of message travel on the runtime's data communicator. Grid halo messages of phase
``k`` from other nodes carry tag ``GRID_TAG + k``: their receives are posted ahead, each into
the place the plan gives it (:mod:`grapeshot.runtime.mailboxes`), and MPI matches one source's
messages of one tag in the order they were sent; a node neighbour writes its messages into
this rank's inbox itself, and their header's news word (:mod:`grapeshot.model.news`) tells
when they are whole, with no MPI message at all. Every other message (custom halos, graph buffers,
migrants) carries ``DATA_TAG`` and a header naming its round ``(step, phase, kind)``
(:mod:`grapeshot.runtime.wire`): it is probed for, and kept until its round is asked for if it
came early. MPI is called from the main thread only.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from grapeshot.model.news import NEWS, first_news, news_of, publish
from grapeshot.runtime.mailboxes import Mailboxes
from grapeshot.runtime.results import Tally
from grapeshot.runtime.watch import Watch
from grapeshot.runtime.wire import check_grid_round, read_header, stamp

if TYPE_CHECKING:
    from mpi4py import MPI

DATA_TAG = 11
#: Grid halo messages of phase ``k`` carry tag ``GRID_TAG + k``: each phase's receives are
#: posted ahead and matched in order per source, apart from every other message.
GRID_TAG = 1000
#: Sends kept before completed ones are looked for: testing them costs more than keeping a few.
_PRUNE_AT = 16
#: Nanoseconds a wait for node neighbours' news spins (the core yielded between looks) before
#: it looks at the other nodes' receives, or before it returns to Python at all.
_NEWS_SLICE_NS, _NEWS_WAIT_NS = 20_000, 10_000_000


class Messenger:
    """One rank's messages on its data communicator.

    Parameters
    ----------
    comm
        The runtime's own data communicator.
    mail
        The rank's mailboxes (grid messages).
    sources
        Ranks this rank receives grid halos from, ascending.
    start_step
        The run's first step (grid exchanges alternate inboxes from it).
    tally, watch
        Where sends, receives and waits are counted, and progress is told.
    """

    def __init__(
        self,
        comm: MPI.Intracomm,
        mail: Mailboxes,
        sources: list[int],
        start_step: int,
        tally: Tally,
        watch: Watch,
    ) -> None:
        self.comm = comm
        self.mail = mail
        self.sources = sources
        self.start_step = start_step
        self.tally = tally
        self.watch = watch
        #: ``(request, buffer)`` of every item send not known to be done.
        self.sends: list[tuple] = []
        #: The last send of each grid exchange and destination, whose buffer is reused.
        self.grid_sends: dict[tuple[int, int], tuple] = {}
        #: Messages of rounds not asked for yet, ``{round: [(source, bytes), ...]}``.
        self.stash: dict[tuple[int, int, int], list[tuple[int, np.ndarray]]] = {}
        #: The posted receives of the current grid exchange, one per source (done: NULL).
        self.grid_recvs: list = []
        #: Sources on other nodes (their messages travel by MPI), ascending.
        self.remote = [r for r in sources if r not in mail.shared_peers]
        #: The current grid round's node neighbours and where their messages start in the
        #: mailboxes' space (-1 once in), how many are still to come, and the round's news
        #: (:mod:`grapeshot.model.news`).
        self.grid_news: tuple[list[int], np.ndarray] = ([], np.zeros(0, dtype=np.int64))
        self.news_left = 0
        self.grid_token = 0
        #: Persistent requests of the grid exchanges, made at a round's first use and
        #: started every round after (a request made anew costs a rank a few µs a phase,
        #: on the path of a neighbour waiting for it): ``{(k, parity): [receive per
        #: source]}`` and ``{(k, parity, dest): send}``. Freed by :meth:`close`.
        self.recv_rounds: dict[tuple[int, int], list] = {}
        self.send_rounds: dict[tuple[int, int, int], MPI.Prequest] = {}
        #: ``{(k, parity): (node neighbours, where their messages start)}``, made with
        #: :attr:`recv_rounds`.
        self.news_rounds: dict[tuple[int, int], tuple[list[int], np.ndarray]] = {}
        from mpi4py import MPI  # (imported by now: the communicator is MPI's)

        self.mpi = MPI

    def parity(self, step: int) -> int:
        """Which of a grid exchange's two inboxes (and halos tuples) serves ``step``: every
        phase runs once a step, so its rounds since this run's start alternate."""
        return (step - self.start_step) % 2

    # -- grid exchanges --------------------------------------------------------------------

    def post_grid_receives(self, step: int, k: int) -> None:
        """Begin round ``step`` of grid exchange ``k``: post the receives of the messages from
        other nodes, each where the plan puts it, and list the node neighbours whose news
        (:mod:`grapeshot.model.news`) is to come.

        MPI matches messages of one source and tag in the order they were sent, so these
        receive this round's, whatever later rounds a fast neighbour has sent already.
        """
        parity = self.parity(step)
        requests = self.recv_rounds.get((k, parity))
        if requests is None:
            mail, tag = self.mail, GRID_TAG + k
            requests = self.recv_rounds[(k, parity)] = [
                self.comm.Recv_init(mail.received(k, parity, r), r, tag) for r in self.remote
            ]
            shared = [r for r in self.sources if r in mail.shared_peers]
            at = [mail.received_at(k, parity, r) for r in shared]
            self.news_rounds[(k, parity)] = (shared, np.array(at, dtype=np.int64))
        if requests:
            self.mpi.Prequest.Startall(requests)
        self.grid_recvs = list(requests)
        shared, at = self.news_rounds[(k, parity)]
        self.grid_news = (shared, at.copy())
        self.news_left = len(shared)
        self.grid_token = news_of(step)

    def send_grid(self, k: int, parity: int, dest: int, raw: np.ndarray, step: int) -> None:
        """Send grid message ``raw`` of exchange ``k``, round ``step``, on inbox ``parity``
        (its header written and stamped) to ``dest``: to a node neighbour, whose inbox holds
        it already, only its news. An MPI send's request of this parity was done before
        (:meth:`outbox_free` waits for each round's sends before the next round packs)."""
        self.count_grid(raw.nbytes)
        if dest in self.mail.shared_peers:
            publish(raw, NEWS * 8, news_of(step))
            return
        request = self.send_rounds.get((k, parity, dest))
        if request is None:
            request = self.send_rounds[(k, parity, dest)] = self.comm.Send_init(
                raw, dest, GRID_TAG + k
            )
        request.Start()
        self.grid_sends[(k, dest)] = (request, raw)

    def count_grid(self, nbytes: int, n: int = 1) -> None:
        """Count ``n`` grid messages of ``nbytes`` bytes in all as sent (and copied: their
        gather, or their tasks' packing)."""
        tally = self.tally
        tally.bytes_sent += nbytes
        tally.messages += n
        tally.copied_bytes += nbytes

    def grid_arrival(self, step: int, k: int, block: bool = True) -> tuple[int, np.ndarray] | None:
        """Wait for the next message of grid exchange ``k``; its source and its bytes
        (``block=False``: ``None`` if none is in).

        Node neighbours' news is looked at in turn with the other nodes' receives; while
        neither has come, the rank yields its core (a neighbour on the same core runs)."""
        t = time.perf_counter()
        got = self._next_grid(k, self.parity(step), block)
        if got is None:
            return None
        source, raw = got
        if block:
            self.tally.wait_seconds += time.perf_counter() - t
        header = read_header(raw)
        self.tally.message_log.append(
            (source, raw.nbytes, (time.time_ns() - header.sent_ns) * 1e-9)
        )
        self.watch.progress_at = time.perf_counter()
        check_grid_round(header, step, k, source)
        return source, raw

    def _next_grid(self, k: int, parity: int, block: bool) -> tuple[int, np.ndarray] | None:
        """The next grid message of the round in, ``(source, raw)``: a node neighbour's whose
        news has come, or another node's received (``None``: none yet, ``block=False``).

        The news is waited for in compiled code without the GIL (the rank's threads run
        meanwhile), in slices while other nodes' messages are to come too."""
        sources, at = self.grid_news
        recvs, mpi = self.grid_recvs, self.mpi
        while True:
            if self.news_left:
                wait = 0 if not block else _NEWS_SLICE_NS if recvs else _NEWS_WAIT_NS
                j = first_news(self.mail.space, at, self.grid_token, wait)
                if j >= 0:
                    at[j] = -1
                    self.news_left -= 1
                    return sources[j], self.mail.received(k, parity, sources[j])
            if recvs:
                if not self.news_left and block:  # only other nodes' to wait for: in MPI
                    j = mpi.Request.Waitany(recvs)
                else:
                    j, done = mpi.Request.Testany(recvs)
                    j = j if done else mpi.UNDEFINED
                if j != mpi.UNDEFINED:
                    recvs[j] = mpi.REQUEST_NULL
                    source = self.remote[j]
                    return source, self.mail.received(k, parity, source)
            if not block:
                return None

    def outbox_free(self, k: int, dests: Iterable[int]) -> None:
        """Wait until the last round's messages of grid exchange ``k`` to ``dests`` have
        left (their buffers are written again)."""
        for r in dests:
            previous = self.grid_sends.pop((k, r), None)
            if previous is not None:
                previous[0].Wait()

    # -- item messages ---------------------------------------------------------------------

    def post(self, dest: int, raw: np.ndarray) -> None:
        """Send item message ``raw`` (:mod:`grapeshot.runtime.wire`) to ``dest``."""
        stamp(raw)
        self.sends.append((self.comm.Isend(raw, dest=dest, tag=DATA_TAG), raw))
        self.tally.bytes_sent += raw.nbytes
        self.tally.messages += 1

    def receive(self, round_: tuple[int, int, int]) -> tuple[int, np.ndarray]:
        """The next message of ``round_`` from any rank; other rounds' messages are kept."""
        from mpi4py import MPI

        kept = self.stash.get(round_)
        if kept:
            return kept.pop(0)
        status = MPI.Status()
        t = time.perf_counter()
        try:
            return self._probe_round(round_, status)
        finally:
            self.tally.wait_seconds += time.perf_counter() - t

    def _probe_round(
        self, round_: tuple[int, int, int], status: MPI.Status
    ) -> tuple[int, np.ndarray]:
        from mpi4py import MPI

        while True:
            self.comm.Probe(source=MPI.ANY_SOURCE, tag=DATA_TAG, status=status)
            source = status.Get_source()
            count = status.Get_count(MPI.BYTE)
            raw = np.empty(count, dtype=np.uint8)
            self.comm.Recv(raw, source=source, tag=DATA_TAG)
            header = read_header(raw)
            # Send posted to receive complete, on the system clock (shared by the ranks of a
            # node, NTP-aligned across nodes): what the simulator's network is calibrated on.
            self.tally.message_log.append(
                (source, raw.nbytes, (time.time_ns() - header.sent_ns) * 1e-9)
            )
            self.watch.progress_at = time.perf_counter()
            if header.round == round_:
                self._prune_sends()
                return source, raw
            self.stash.setdefault(header.round, []).append((source, raw))

    def _prune_sends(self) -> None:
        from mpi4py import MPI

        if len(self.sends) < _PRUNE_AT:
            return
        done = MPI.Request.Testsome([r for r, _ in self.sends]) or []
        if done:
            finished = set(done)
            self.sends = [s for i, s in enumerate(self.sends) if i not in finished]

    def finish_sends(self) -> None:
        """Wait for every send to complete."""
        from mpi4py import MPI

        requests = [r for r, _ in self.sends] + [r for r, _ in self.grid_sends.values()]
        if requests:
            MPI.Request.Waitall(requests)
        self.sends.clear()
        self.grid_sends.clear()

    def close(self) -> None:
        """Free the grid exchanges' persistent requests (every one of them done: the sends
        by :meth:`finish_sends`, the receives by their rounds)."""
        for request in [*self.send_rounds.values()] + [
            r for requests in self.recv_rounds.values() for r in requests
        ]:
            request.Free()
        self.send_rounds.clear()
        self.recv_rounds.clear()
        self.news_rounds.clear()
