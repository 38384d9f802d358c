"""Which batched phases' tasks make their own halo copies, and the tables they make them with.

With one thread per rank, a batched phase with a grid exchange is *fused*: the rank sends its
messages but copies no halo itself, and each task copies its own halos right before its kernel
(:mod:`grapeshot.model.task_halos`); a batched phase followed by a grid exchange whose fields
it holds *prepacks*: each task packs its part of the next phase's messages right after its
kernel, and where those messages all go to node neighbours and the next phase is fused too,
the phase *tells*: its last call writes their news (:mod:`grapeshot.model.news`), and they
leave with no Python between the last task and the neighbour. A fused phase whose messages all
come from node neighbours *hears*: its tasks wait for the messages they take pieces of
themselves, and the phase is one call. With threads, tasks of one phase
run at once and would race on their neighbours' cells: nothing is fused. Planned once, from
the rank's plan and its mailboxes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grapeshot.model.task_halos import (
    PIECE_AT,
    StateViews,
    make_halos,
    new_state,
    other_round,
    state,
)
from grapeshot.runtime.halo_plan import MessagePieces, fused_halos, pack_pieces, shifted_halos
from grapeshot.runtime.mailboxes import Mailboxes
from grapeshot.runtime.rank_plan import RankPlan
from grapeshot.runtime.wire import HALO, HEADER


@dataclass(frozen=True, eq=False)
class Fusion:
    """The fused copies of one rank's batched phases.

    Attributes
    ----------
    halos
        ``{batched phase: (halos on even rounds, halos on odd rounds)}``: the ``halos`` tuple
        its batch calls get (:mod:`grapeshot.model.task_halos`; the mailboxes alternate
        between rounds).
    fused
        The phases whose tasks copy their own halos.
    prepacks
        ``{phase: next phase}`` for the phases whose tasks pack the next phase's messages.
    tells
        The prepacking phases whose last call sends those messages itself (the runner sets
        :attr:`news` before that call).
    hears
        ``{fused phase: (its tasks' order, its sources)}`` for the phases whose tasks wait
        for their messages themselves (the runner sets ``views.expect``): positions of the
        partitions needing no message first, then the others; the source ranks in the order
        of the ``PIECE_SRC`` numbers.
    views
        The views of the one ``STATE`` array every row with copies shares
        (:class:`~grapeshot.model.task_halos.StateViews`); :attr:`ran`, :attr:`halo_ns`,
        :attr:`last` and :attr:`news` are four of them.
    """

    halos: dict[int, tuple[tuple, tuple]]
    fused: frozenset[int]
    prepacks: dict[int, int]
    tells: frozenset[int]
    hears: dict[int, tuple[np.ndarray, list[int]]]
    views: StateViews

    @property
    def ran(self) -> np.ndarray:
        """int ``(L,)``: per local partition, whether its task began in this round of a fused
        phase (the runner zeroes it before each round)."""
        return self.views.ran

    @property
    def halo_ns(self) -> np.ndarray:
        """int ``(L,)``: nanoseconds each task of the last batch call spent on its copies."""
        return self.views.halo_ns

    @property
    def last(self) -> np.ndarray:
        """int ``(1,)``: scratch of the packing tasks."""
        return self.views.last

    @property
    def news(self) -> np.ndarray:
        """int ``(1,)``: the news the next call of a telling phase writes (0: none)."""
        return self.views.news

    @classmethod
    def build(cls, plan: RankPlan, mail: Mailboxes, threads: int) -> Fusion:
        """Plan the fused copies of ``plan``'s batched phases with ``threads`` threads."""
        n = len(plan.local)
        built = _Built(plan)
        copies = {k: _copies(plan, mail, k, built) if threads == 1 else (None, None)
                  for k in plan.batched}  # fmt: skip
        fused = frozenset(k for k, (own, _) in copies.items() if own is not None)
        hearing = {k: _hearing(k, copies[k][0], mail.in_starts[k]) for k in fused
                   if plan.all_batched and set(mail.in_starts[k]) <= mail.shared_peers}  # fmt: skip
        # Every row with copies writes this one state.
        shared = new_state(n, True, max((len(h[1]) for h in hearing.values()), default=0))
        n_phases = len(plan.program.phases)
        prepacks = {k: (k + 1) % n_phases for k, (_, packs) in copies.items() if packs is not None}
        tells = frozenset(
            k
            for k, nxt in prepacks.items()
            if plan.all_batched
            and nxt in fused
            and set(plan.plans[nxt].send_sizes) <= mail.shared_peers
        )
        halos = {}
        for k, (own, packs) in copies.items():
            heads = None
            if k in tells:  # round n of phase k tells round n of a later phase, else n + 1's
                nxt = prepacks[k]
                parities = (0, 1) if nxt > k else (1, 0)
                heads = [np.array([nxt, HALO, *mail.outgoing_starts(nxt, p).values()],
                                  dtype=np.int64) for p in parities]  # fmt: skip
            some = own is not None or packs is not None
            even = make_halos(
                n,
                data=plan.arena.shared if some else None,
                own=own,
                hearing=hearing[k][0] if k in hearing else None,
                inbox=None if own is None else mail.inbox(k, 0).view(np.float64),
                packs=None if packs is None else packs[0],
                outbox=None if packs is None else mail.space.view(np.float64),
                news_at=None if heads is None else heads[0],
                state_array=shared if some else None,
            )
            # The odd rounds' differ in their inbox and where their messages go alone.
            odd = other_round(
                even,
                None if own is None else mail.inbox(k, 1).view(np.float64),
                None if packs is None else packs[1][1],  # (ptr, at, lo, hi, runs): its ``at``
                None if heads is None else heads[1],
            )
            halos[k] = (even, odd)
        hears = {}
        if hearing:  # the partitions needing no message first
            unfed = np.asarray(plan.unfed, dtype=np.int64)
            order = np.concatenate([unfed, np.setdiff1d(np.arange(n, dtype=np.int64), unfed)])
            hears = {k: (order, sources) for k, (_, sources) in hearing.items()}
        return cls(halos, fused, prepacks, tells, hears, state(shared))

    def packing(self, k: int, parity: int) -> tuple | None:
        """The ``halos`` tuple whose packing fills grid exchange ``k``'s messages of round
        parity ``parity`` (:func:`~grapeshot.model.task_halos.pack_all`), or ``None`` if no
        phase's tasks pack them."""
        for j, nxt in self.prepacks.items():
            if nxt == k:  # a wrap to the next step packs the other round's outbox
                return self.halos[j][parity if k > j else 1 - parity]
        return None


class _Built:
    """The fused tables made so far for one plan: an exchange whose fields lie in the arena
    as an earlier one's (a ping-pong's ``u`` then ``v``) gets that one's, shifted to its
    fields, instead of building them again (0.5-1 ms of a re-plan at 16×16)."""

    def __init__(self, plan: RankPlan) -> None:
        self.plan = plan
        #: ``(names, width, inbox starts, tables)`` of each fused exchange built.
        self.own: list[tuple[tuple[str, ...], int, dict, tuple]] = []
        #: ``(names, width, pieces)`` of each exchange packed early.
        self.packs: list[tuple[tuple[str, ...], int, MessagePieces | None]] = []

    def delta(self, built: tuple[str, ...], names: tuple[str, ...]) -> int | None:
        """The one shift in ``arena.shared`` from fields ``built`` to ``names``, if they lie
        alike, field for field; else ``None``."""
        arena, boxes = self.plan.arena, self.plan.boxes
        if len(built) != len(names) or any(n not in arena.offset for n in (*built, *names)):
            return None
        pairs = list(zip(built, names, strict=True))
        if not all(arena.same_layout(a, b, boxes) for a, b in pairs):
            return None
        shifts = {arena.offset[b] - arena.offset[a] for a, b in pairs}
        return shifts.pop() if len(shifts) == 1 else None

    def own_copies(self, k: int, starts: dict[int, int], header: int) -> tuple | None:
        """:func:`fused_halos` of grid exchange ``k`` with its inbox ``starts``."""
        plan = self.plan
        grid = plan.plans[k]
        names, width = grid.names, grid.width
        for done, done_width, done_starts, tables in self.own:
            if done_width == width and done_starts == starts and tables is not None:
                delta = self.delta(done, names)
                if delta is not None:
                    return shifted_halos(tables, delta)
        tables = fused_halos(plan.links, plan.arena, grid, starts, header)
        self.own.append((names, width, starts, tables))
        return tables

    def pieces(self, k: int) -> MessagePieces | None:
        """:func:`pack_pieces` of grid exchange ``k``."""
        plan = self.plan
        grid = plan.plans[k]
        names, width = grid.names, grid.width
        for done, done_width, pieces in self.packs:
            if done_width == width and pieces is not None:
                delta = self.delta(done, names)
                if delta is not None:
                    return pieces if delta == 0 else pieces.shifted(delta)
        pieces = pack_pieces(plan.links, plan.arena, grid)
        self.packs.append((names, width, pieces))
        return pieces


def _hearing(
    k: int, own: tuple, starts: dict[int, int]
) -> tuple[tuple[np.ndarray, np.ndarray], list[int]]:
    """``(PIECE_SRC, SRC_AT)`` of fused exchange ``k`` (:mod:`grapeshot.model.task_halos`):
    which message each piece of ``own`` (its :data:`OWN_COPIES` tables) comes from, and the
    messages' round and where each one's header lies in the inbox (``starts``, ``{source:
    byte offset}``); and the source ranks in the order of those numbers."""
    sources = sorted(starts, key=starts.__getitem__)
    at = np.array([starts[r] for r in sources], dtype=np.int64)
    piece_at = np.asarray(own[PIECE_AT], dtype=np.int64) * 8  # words into bytes
    piece_src = np.searchsorted(at, piece_at, side="right").astype(np.int64) - 1
    return (piece_src, np.concatenate([[k, HALO], at]).astype(np.int64)), sources


def _copies(
    plan: RankPlan, mail: Mailboxes, k: int, built: _Built
) -> tuple[tuple | None, list | None]:
    """The tables of batched phase ``k``'s own halo copies (``None``: no grid exchange), and
    of its part of the next phase's packing on even and odd rounds (``None``: not packed)."""
    phases = plan.program.phases
    header = HEADER * 8
    nxt = (k + 1) % len(phases)
    nxt_ex = phases[nxt].exchange
    own = packs = None
    if k in plan.plans:
        own = built.own_copies(k, mail.in_starts[k], header)
    # Packed early only if nothing touches those fields between this phase's kernels and the
    # next phase's send (a graph exchange unpacks into blocks first).
    if (
        nxt != k
        and nxt in plan.plans
        and phases[nxt].graph is None
        and set(nxt_ex.fields) <= set(plan.batches[k].fields)
    ):
        # Round n of phase k comes before round n of a later phase and before round n + 1 of
        # phase 0. Both rounds' pieces are one cut, placed in either outbox.
        pieces = built.pieces(nxt)
        if pieces is not None:
            later = [pieces.placed(mail.outgoing_starts(nxt, parity), header) for parity in (0, 1)]
            packs = later if nxt > k else later[::-1]
    return own, packs
