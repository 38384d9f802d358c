"""One rank's point-to-point messages: posting, receiving by round, and the grid exchanges'
planned receives and sends through the mailboxes.

Two kinds of message travel on the runtime's data communicator. Grid halo messages of phase
``k`` carry tag ``GRID_TAG + k``: their receives are posted ahead, each into the place the
plan gives it (:mod:`grapeshot.runtime.mailboxes`), and MPI matches one source's messages of
one tag in the order they were sent. Every other message (custom halos, graph buffers,
migrants) carries ``DATA_TAG`` and a header naming its round ``(step, phase, kind)``
(:mod:`grapeshot.runtime.wire`): it is probed for, and kept until its round is asked for if it
came early. MPI is called from the main thread only.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from grapeshot.runtime.mailboxes import Mailboxes
from grapeshot.runtime.results import Tally
from grapeshot.runtime.watch import Watch
from grapeshot.runtime.wire import HALO, read_header, stamp

if TYPE_CHECKING:
    from mpi4py import MPI

DATA_TAG = 11
#: Grid halo messages of phase ``k`` carry tag ``GRID_TAG + k``: each phase's receives are
#: posted ahead and matched in order per source, apart from every other message.
GRID_TAG = 1000
#: Sends kept before completed ones are looked for: testing them costs more than keeping a few.
_PRUNE_AT = 16


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
        self.nothing = np.zeros(0, dtype=np.uint8)  # the payload of news through the window
        #: Persistent requests of the grid exchanges, made at a round's first use and
        #: started every round after (a request made anew costs a rank a few µs a phase,
        #: on the path of a neighbour waiting for it): ``{(k, parity): [receive per
        #: source]}`` and ``{(k, parity, dest): send}``. Freed by :meth:`close`.
        self.recv_rounds: dict[tuple[int, int], list] = {}
        self.send_rounds: dict[tuple[int, int, int], MPI.Prequest] = {}

    def parity(self, step: int) -> int:
        """Which of a grid exchange's two inboxes (and halos tuples) serves ``step``: every
        phase runs once a step, so its rounds since this run's start alternate."""
        return (step - self.start_step) % 2

    # -- grid exchanges --------------------------------------------------------------------

    def post_grid_receives(self, step: int, k: int) -> None:
        """Post the receives of grid exchange ``k``'s messages, each where the plan puts it
        (from a node neighbour, only the news: its message is in the inbox already then).

        MPI matches messages of one source and tag in the order they were sent, so these
        receive this round's, whatever later rounds a fast neighbour has sent already.
        """
        from mpi4py import MPI

        parity = self.parity(step)
        requests = self.recv_rounds.get((k, parity))
        if requests is None:
            mail, tag = self.mail, GRID_TAG + k
            requests = self.recv_rounds[(k, parity)] = [
                self.comm.Recv_init(
                    self.nothing if r in mail.shared_peers else mail.received(k, parity, r),
                    r,
                    tag,
                )
                for r in self.sources
            ]
        if requests:
            MPI.Prequest.Startall(requests)
        self.grid_recvs = list(requests)

    def send_grid(self, k: int, parity: int, dest: int, raw: np.ndarray) -> None:
        """Send grid message ``raw`` of exchange ``k`` on inbox ``parity`` (its header written
        and stamped) to ``dest``: only the news to a node neighbour, whose inbox holds it
        already. This parity's request was done before (:meth:`outbox_free` waits for each
        round's sends before the next round packs)."""
        request = self.send_rounds.get((k, parity, dest))
        if request is None:
            body = self.nothing if dest in self.mail.shared_peers else raw
            request = self.send_rounds[(k, parity, dest)] = self.comm.Send_init(
                body, dest, GRID_TAG + k
            )
        request.Start()
        self.grid_sends[(k, dest)] = (request, raw)
        tally = self.tally
        tally.bytes_sent += raw.nbytes
        tally.messages += 1
        tally.copied_bytes += raw.nbytes

    def grid_arrival(self, step: int, k: int, block: bool = True) -> tuple[int, np.ndarray] | None:
        """Wait for the next message of grid exchange ``k``; its source and its bytes
        (``block=False``: ``None`` if none is in)."""
        from mpi4py import MPI

        if block:
            t = time.perf_counter()
            j = MPI.Request.Waitany(self.grid_recvs)
            self.tally.wait_seconds += time.perf_counter() - t
        else:
            j, done = MPI.Request.Testany(self.grid_recvs)
            if not done or j == MPI.UNDEFINED:
                return None
        self.grid_recvs[j] = MPI.REQUEST_NULL
        source = self.sources[j]
        if source in self.mail.shared_peers:
            self.mail.sync()
        raw = self.mail.received(k, self.parity(step), source)
        header = read_header(raw)
        self.tally.message_log.append(
            (source, raw.nbytes, (time.time_ns() - header.sent_ns) * 1e-9)
        )
        self.watch.progress_at = time.perf_counter()
        if header.round != (step, k, HALO):
            raise RuntimeError(
                f"grid message from rank {source} is of round {header.round}, expected "
                f"{(step, k, HALO)}: the ranks' plans disagree"
            )
        return source, raw

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
