"""One rank's migration of particles between partitions: what each task took out goes to the
neighbour partitions, local ones in memory and the others one message per rank (or through a
planned exchange, ``--exchange``), and is taken in, in neighbour order, before the next phase.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from grapeshot.model.program import Offset, Phase
from grapeshot.runtime.messages import Messenger
from grapeshot.runtime.rank_plan import RankPlan
from grapeshot.runtime.results import Tally
from grapeshot.runtime.tasks import PartSlots
from grapeshot.runtime.watch import Watch
from grapeshot.runtime.wire import MIGRANTS, decode_items, encode_items, stamp

if TYPE_CHECKING:
    from mpi4py import MPI

#: ``(offset, neighbour partition, the slot this partition has in the neighbour's offsets)``
Neighbour = tuple[Offset, int, int]


def neighbour_slots(plan: RankPlan) -> list[list[Neighbour]]:
    """Per local partition (position), its neighbours as emigrants address them: the offset,
    the neighbour, and the slot of the opposite offset (where the neighbour files them)."""
    offsets = plan.offsets
    return [
        [
            (o, q, offsets.index(tuple(-x for x in o)))
            for o in offsets
            if (q := plan.boxes[p].neighbour(o)) is not None
        ]
        for p in plan.local
    ]


class Migrator:
    """The migrations of one rank (main thread).

    Parameters
    ----------
    plan
        The rank's plan.
    exchange
        How migrants travel between ranks: ``"ac"`` (post everything, receive as it comes) or
        a schedule of :mod:`grapeshot.exchange.mpi_exchange` on ``coll``.
    coll
        The communicator of planned exchanges.
    messenger
        How ``"ac"`` messages travel.
    slots
        Where the tasks left their emigrants.
    tally, watch
        The rank's counters and progress.
    """

    def __init__(
        self,
        plan: RankPlan,
        exchange: str,
        coll: MPI.Intracomm,
        messenger: Messenger,
        slots: PartSlots,
        tally: Tally,
        watch: Watch,
    ) -> None:
        self.plan = plan
        self.exchange = exchange
        self.coll = coll
        self.messenger = messenger
        self.slots = slots
        self.tally = tally
        self.watch = watch
        migrates = any(ph.migrate is not None for ph in plan.program.phases)
        self.neighbours = neighbour_slots(plan) if migrates else []

    def migrate(self, step: int, k: int, phase: Phase) -> None:
        """Deliver phase ``k``'s emigrants of ``step`` and take them in, every partition its
        arrivals in slot order."""
        plan, tally = self.plan, self.tally
        arrived: list[dict[int, np.ndarray]] = [{} for _ in plan.local]
        outgoing: dict[int, list] = {r: [] for r in plan.links.send_links}
        node_of, position, emigrants = plan.node_of, plan.position, self.slots.emigrants
        for i, leaving in enumerate(emigrants):
            for offset, q, slot in self.neighbours[i]:
                buf = leaving.get(offset)
                if buf is None:
                    continue
                r = int(node_of[q])
                if r == plan.rank:
                    arrived[position[q]][slot] = buf
                else:
                    outgoing[r].append((q, slot, buf))
            emigrants[i] = None
        if self.exchange != "ac":  # --exchange: a schedule of grapeshot.exchange instead
            self._exchange_planned(step, k, outgoing, arrived)
            outgoing = {}
        for r, items in outgoing.items():
            raw = encode_items(step, k, MIGRANTS, items)
            self.messenger.post(r, raw)
            tally.copied_bytes += raw.nbytes
        pending = list(plan.sources) if self.exchange == "ac" else []
        while pending:
            self.watch.waiting_for = f"step {step} phase {phase.name!r}: emigrants from {pending}"
            source, raw = self.messenger.receive((step, k, MIGRANTS))
            pending.remove(source)
            tally.copied_bytes += raw.nbytes
            for part, slot, buf in decode_items(raw):
                arrived[position[part]][slot] = buf
        immigrate = phase.migrate.immigrate
        for i, p in enumerate(plan.local):
            got = arrived[i]
            immigrate(plan.blocks[p], plan.boxes[p], [got[s] for s in sorted(got)])

    def _exchange_planned(
        self,
        step: int,
        k: int,
        outgoing: dict[int, list[tuple[int, int, np.ndarray]]],
        arrived: list[dict[int, np.ndarray]],
    ) -> None:
        """Migrants of ``(step, k)`` through one planned exchange (``--exchange``)."""
        from grapeshot.exchange.mpi_exchange import exchange_once

        tally = self.tally
        sends = {}
        for r, items in outgoing.items():
            raw = encode_items(step, k, MIGRANTS, items)
            stamp(raw)
            sends[r] = raw
            tally.bytes_sent += raw.nbytes
            tally.messages += 1
            tally.copied_bytes += raw.nbytes
        self.watch.waiting_for = f"step {step}: the {self.exchange} exchange of migrants"
        t = time.perf_counter()
        got = exchange_once(sends, comm=self.coll, algorithm=self.exchange, seed=step)
        tally.wait_seconds += time.perf_counter() - t
        self.watch.progress_at = time.perf_counter()
        for raw in got.values():
            tally.copied_bytes += raw.nbytes
            for part, slot, buf in decode_items(raw):
                arrived[self.plan.position[part]][slot] = buf
