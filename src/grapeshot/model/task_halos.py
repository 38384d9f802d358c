"""A batched task's own halo copies: what :func:`task_begins` and :func:`batch_ends` do.

The task runtime hands every :class:`~grapeshot.model.program.Batch` call a ``halos`` tuple.
Where the runtime fuses halo exchanges into tasks (one thread per rank, grid fields of
float64), the tuple lists, per partition, the copies its task makes:

- before its kernel, the halos of *this* phase's exchange: with the partitions of the same
  rank, both ways with every neighbour that has not begun yet in this phase (its cells still
  hold what the phase must see), and the pieces of the messages from other ranks that land
  in its ghost cells;
- after its kernel, its part of the *next* phase's messages to other ranks, packed while its
  cells are still in cache (its values are final then: only its own kernel writes them);
  where those messages go to node neighbours alone, the batch's last call also stamps their
  send time and writes their news once every task has packed (:mod:`grapeshot.model.news`):
  they are sent the moment the last task is done, with no Python in between.

Where every message of the phase comes from node neighbours, the runner may leave the waiting
to the tasks (it sets the round's news in ``STATE``): a task whose pieces come from a message
not heard of yet waits for its news (:mod:`grapeshot.model.news`) before it is stamped, and
the phase is one call, its tasks in an order that puts those needing no message first.

Elsewhere the lists are empty and the two functions only stamp the tasks. Either way a batch
calls them like this:

.. code-block:: python

    for t in range(todo.size):
        i = todo[t]
        task_begins(halos, stamps, t, i)
        ...  # the kernel of local partition i
    batch_ends(halos, stamps, todo.size)

The copies then count as the tasks' work (``halo_ns`` keeps their share so that records can
tell them from the kernels); a partition's packing is done at the start of the next task (or
by :func:`batch_ends`) and counted there.

Every copy is a list of *runs*: a run moves ``count`` cells whose indices step evenly on
both sides (a face's row is one run of step 1, its column one run of step the row's length),
so a copy loop reads no index per cell. :func:`grapeshot.runtime.halo_plan.strided_runs` cuts
the cells of a halo slab into them.

The tuple has five arrays, named by the constants below (a batch call's arguments are typed
one array at a time, each time it is called: five arrays cost numba's dispatch a third of what
twenty-two did):

- ``DATA``: float64, the rank's arena of exchanged fields (every copy reads or writes it);
- ``INBOX``: float64, this phase's received messages;
- ``OUTBOX``: float64, the next phase's messages;
- ``STATE``: int64, what the copies write (:func:`state`): ``L`` (local partitions), the
  partition whose packing is still to do (``-1``: none), the news :func:`batch_ends` writes
  into the packed messages' headers (0: none; the runner sets it before the phase's last
  call), the news the tasks wait for (0: none, the runner waited), how many tasks of the call
  waited, 1 + the first source whose message was of another round (0: none), ``S`` (room
  for the sources of a round), per partition 1 once it began in this phase; where anything
  is copied (*timed*), per task the nanoseconds it spent in copies and those it waited for
  messages before it, and per source the news last heard from it and the nanoseconds its
  message took (from its send time to the first task that looked: the system clock);
- ``TABLES``: int64, every read-only table one after the other, after ``N_TABLES + 1``
  offsets (:func:`pack_tables`); table ``k`` is ``TABLES[TABLES[k]:TABLES[k + 1]]``.

The tables, by number (``L`` local partitions):

- ``PAIR_PTR``: ``(L + 1,)``, CSR into ``PAIR_LINK``: the local links touching ``i``;
- ``PAIR_LINK``: link ids;
- ``LINK_SRC``, ``LINK_DST``: ``(n_links,)`` the partitions (positions) of each local link;
- ``LINK_PTR``: ``(n_links + 1,)``, each link's range of rows in ``COPY_RUNS``;
- ``COPY_RUNS``: ``(runs, 5)`` row by row: source cell, source step, destination cell,
  destination step, count, in ``DATA``;
- ``PIECE_PTR``: ``(L + 1,)``, CSR into the pieces of arrived messages landing in ``i``;
- ``PIECE_AT``: where a piece starts in ``INBOX``; ``PIECE_LO``, ``PIECE_HI``: its range of
  rows in ``PIECE_RUNS``;
- ``PIECE_RUNS``: ``(runs, 3)`` row by row: first cell, step, count in ``DATA``, filled from
  the piece's consecutive words of ``INBOX``;
- ``OUT_PTR``: ``(L + 1,)``, CSR into the pieces of the next phase's messages ``i`` packs;
- ``OUT_AT``: where a piece goes in ``OUTBOX``; ``OUT_LO``, ``OUT_HI``: its range of rows in
  ``OUT_RUNS``;
- ``OUT_RUNS``: ``(runs, 3)`` row by row: first cell, step, count in ``DATA``, packed into
  the piece's consecutive words of ``OUTBOX``;
- ``NEWS_AT``: the phase and kind of the packed messages whose headers :func:`batch_ends`
  writes, then the byte offsets of those headers in ``OUTBOX`` (empty: the runner sends
  them);
- ``PIECE_SRC``: per piece of ``PIECE_AT``, the source (0 to ``S - 1``) of its message;
  ``SRC_AT``: the phase and kind of the messages, then per source the byte offset of its
  message's header in ``INBOX``.
"""

from __future__ import annotations

from itertools import pairwise
from typing import NamedTuple

import numpy as np
from numba import njit

from grapeshot.model.clock import now_ns, wall_ns
from grapeshot.model.news import (
    ITEMS,
    KIND,
    NEWS,
    PHASE,
    SENT,
    STEP,
    get_word,
    observed,
    publish,
    put_word,
    step_of,
    yield_core,
)

#: The entries of the ``halos`` tuple (see the module).
DATA, INBOX, OUTBOX, STATE, TABLES = range(5)
#: The tables in ``TABLES`` (see the module).
(
    PAIR_PTR, PAIR_LINK, LINK_SRC, LINK_DST, LINK_PTR, COPY_RUNS, PIECE_PTR, PIECE_AT,
    PIECE_LO, PIECE_HI, PIECE_RUNS, OUT_PTR, OUT_AT, OUT_LO, OUT_HI, OUT_RUNS, NEWS_AT,
    PIECE_SRC, SRC_AT,
) = range(19)  # fmt: skip
N_TABLES = 19
#: The tables :func:`grapeshot.runtime.halo_plan.fused_halos` gives, and
#: :func:`~grapeshot.runtime.halo_plan.pack_pieces`, placed.
OWN_COPIES = slice(PAIR_PTR, OUT_PTR)
PACKS = slice(OUT_PTR, NEWS_AT)
#: Where ``STATE`` holds ``L``, the partition still to pack, the news to write, the news to
#: wait for, the tasks that waited, a message of another round and ``S``; the ``ran`` flags
#: follow.
_N, _LAST, _NEWS, _EXPECT, _WAITS, _BAD, _S, _RAN = range(8)


class StateViews(NamedTuple):
    """Views of a ``STATE`` array (see the module); the timed ones empty where not timed."""

    last: np.ndarray  # (1,)
    news: np.ndarray  # (1,)
    expect: np.ndarray  # (1,)
    waits: np.ndarray  # (1,)
    bad: np.ndarray  # (1,)
    ran: np.ndarray  # (L,)
    halo_ns: np.ndarray  # (L,)
    wait_ns: np.ndarray  # (L,)
    heard: np.ndarray  # (S,)
    latency_ns: np.ndarray  # (S,)


def new_state(n_local: int, timed: bool, sources: int = 0) -> np.ndarray:
    """A ``STATE`` array for ``n_local`` partitions, nothing begun, nothing to pack or wait
    for; ``timed``: with room for each task's nanoseconds of copies and of waiting, and for
    what ``sources`` sources were last heard of."""
    size = _RAN + n_local + ((2 * n_local + 2 * sources) if timed else 0)
    state = np.zeros(size, dtype=np.int64)
    state[_N], state[_LAST], state[_S] = n_local, -1, sources if timed else 0
    return state


def state(array: np.ndarray) -> StateViews:
    """Views of a ``STATE`` array."""
    n, s = int(array[_N]), int(array[_S])
    at = _RAN + n
    timed = array.size > at
    cut = [at, at + n, at + 2 * n, at + 2 * n + s, at + 2 * n + 2 * s] if timed else [at] * 5
    return StateViews(
        *(array[w : w + 1] for w in (_LAST, _NEWS, _EXPECT, _WAITS, _BAD)),
        array[_RAN:at],
        *(array[a:b] for a, b in pairwise(cut)),
    )


def empty_tables(n_local: int) -> list[np.ndarray]:
    """The ``N_TABLES`` tables of no copies for ``n_local`` partitions."""
    none = np.zeros(0, dtype=np.int64)
    ptr = np.zeros(n_local + 1, dtype=np.int64)
    tables = [none] * N_TABLES
    tables[PAIR_PTR] = tables[PIECE_PTR] = tables[OUT_PTR] = ptr
    tables[LINK_PTR] = np.zeros(1, dtype=np.int64)
    return tables


def pack_tables(tables: list[np.ndarray]) -> np.ndarray:
    """``TABLES`` of ``N_TABLES`` int tables (2-D ones row by row)."""
    flat = [np.ascontiguousarray(t, dtype=np.int64).ravel() for t in tables]
    sizes = np.array([t.size for t in flat], dtype=np.int64)
    head = N_TABLES + 1 + np.concatenate([[0], np.cumsum(sizes)])
    return np.concatenate([head, *flat]).astype(np.int64)


def make_halos(
    n_local: int,
    *,
    data: np.ndarray | None = None,
    own: tuple | list | None = None,
    inbox: np.ndarray | None = None,
    packs: tuple | list | None = None,
    outbox: np.ndarray | None = None,
    news_at: np.ndarray | None = None,
    hearing: tuple[np.ndarray, np.ndarray] | None = None,
    state_array: np.ndarray | None = None,
) -> tuple:
    """A ``halos`` tuple for ``n_local`` partitions: ``own`` (the tables of
    :data:`OWN_COPIES`) copy this phase's halos between ``data`` and ``inbox``; ``packs``
    (:data:`PACKS`) pack the next phase's messages into ``outbox``, whose headers at the byte
    offsets ``news_at`` (:data:`NEWS_AT`) get their news at the end; ``hearing``, the tables
    ``(PIECE_SRC, SRC_AT)``, lets the tasks wait for ``inbox``'s messages; ``state_array``
    (default a new one, timed if anything is copied) is what the copies write."""
    tables = empty_tables(n_local)
    if own is not None:
        tables[OWN_COPIES] = list(own)
    if packs is not None:
        tables[PACKS] = list(packs)
    if news_at is not None:
        tables[NEWS_AT] = news_at
    if hearing is not None:
        tables[PIECE_SRC], tables[SRC_AT] = hearing
    empty = np.zeros(0, dtype=np.float64)
    if state_array is None:
        sources = 0 if hearing is None else hearing[1].size - 2  # (SRC_AT: phase, kind, ...)
        state_array = new_state(n_local, own is not None or packs is not None, sources)
    return (
        empty if data is None else data,
        empty if inbox is None else inbox,
        empty if outbox is None else outbox,
        state_array,
        pack_tables(tables),
    )


def other_round(
    halos: tuple,
    inbox: np.ndarray | None,
    out_at: np.ndarray | None,
    news_at: np.ndarray | None = None,
) -> tuple:
    """``halos`` for the other round of its phase: another ``inbox`` (the pieces lie alike in
    it) and, where it packs, its pieces at ``out_at`` in ``OUTBOX`` (the other round's
    messages, their headers at ``news_at``); the rest shared (a second :func:`make_halos`
    joined every table again)."""
    tables = halos[TABLES]
    if out_at is not None or news_at is not None:
        tables = tables.copy()
    if out_at is not None:
        tables[tables[OUT_AT] : tables[OUT_AT + 1]] = out_at
    if news_at is not None:
        tables[tables[NEWS_AT] : tables[NEWS_AT + 1]] = news_at
    data, old_inbox, outbox, state_array, _ = halos
    return data, old_inbox if inbox is None else inbox, outbox, state_array, tables


def no_halos(n_local: int) -> tuple:
    """A ``halos`` tuple with nothing to copy, for ``n_local`` partitions."""
    return make_halos(n_local)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def unsigned(index):
    """``index`` (a cell of an array, never negative) as an unsigned index: numba checks a
    signed one for a negative value to wrap, a branch per cell in a copy loop."""
    return np.uint64(index)


@njit(cache=True, nogil=True, _nrt=False)
def _pack(halos, i) -> None:
    """Gather local partition ``i``'s pieces of the next phase's messages."""
    # Tables are read at their offsets in TABLES, not sliced: a slice is an array object
    # whose reference counting costs more than the few cells most tasks copy.
    data, outbox, tb = halos[DATA], halos[OUTBOX], halos[TABLES]
    ptr, at0, lo, hi, runs = tb[OUT_PTR], tb[OUT_AT], tb[OUT_LO], tb[OUT_HI], tb[OUT_RUNS]
    for e in range(tb[ptr + i], tb[ptr + i + 1]):
        at = tb[at0 + e]
        for r in range(tb[lo + e], tb[hi + e]):
            row = runs + 3 * r
            first, step, count = tb[row], tb[row + 1], tb[row + 2]
            for c in range(count):
                outbox[unsigned(at + c)] = data[unsigned(first + c * step)]
            at += count


@njit(cache=True, nogil=True, _nrt=False)
def pack_all(halos) -> None:
    """Every local partition's pieces of the next phase's messages, as the tasks pack them
    (the runtime packs a round the tasks did not: the first after a re-plan)."""
    for i in range(halos[STATE][_N]):
        _pack(halos, i)


@njit(cache=True, nogil=True, _nrt=False)
def _hear(halos, i, news) -> int:
    """Wait until every message local partition ``i`` takes pieces of has news ``news`` (the
    core yielded between looks); nanoseconds waited."""
    st, tb, inbox = halos[STATE], halos[TABLES], halos[INBOX]
    n = st[_N]
    heard = _RAN + 3 * n
    latency = heard + st[_S]
    ptr, src, src_at = tb[PIECE_PTR], tb[PIECE_SRC], tb[SRC_AT]
    waited = 0
    for e in range(tb[ptr + i], tb[ptr + i + 1]):
        s = tb[src + e]
        if st[heard + s] == news:
            continue
        head = tb[src_at + 2 + s]
        if observed(inbox, head + NEWS * 8) != news:
            begin = now_ns()
            while observed(inbox, head + NEWS * 8) != news:
                yield_core()
            waited += now_ns() - begin
        st[heard + s] = news
        st[latency + s] = wall_ns() - get_word(inbox, head + SENT * 8)
        if st[_BAD] == 0 and (
            get_word(inbox, head + STEP * 8) != step_of(news)
            or get_word(inbox, head + PHASE * 8) != tb[src_at]
            or get_word(inbox, head + KIND * 8) != tb[src_at + 1]
        ):
            st[_BAD] = s + 1
    return waited


@njit(cache=True, nogil=True, _nrt=False)
def task_begins(halos, stamps, t, i) -> None:
    """Stamp task ``t`` (local partition ``i``) and make its halo copies (see the module)."""
    st = halos[STATE]
    news = st[_EXPECT]
    if news != 0:  # the messages it takes pieces of first: their wait is not its time
        waited = _hear(halos, i, news)
        if waited:
            st[_RAN + 2 * st[_N] + t] = waited
            st[_WAITS] += 1
    start = now_ns()
    stamps[t] = start
    tb = halos[TABLES]
    if st[_LAST] >= 0:
        _pack(halos, st[_LAST])
    data = halos[DATA]
    n = st[_N]
    pair_ptr, pair_link = tb[PAIR_PTR], tb[PAIR_LINK]
    link_src, link_dst = tb[LINK_SRC], tb[LINK_DST]
    link_ptr, copies = tb[LINK_PTR], tb[COPY_RUNS]
    for e in range(tb[pair_ptr + i], tb[pair_ptr + i + 1]):
        link = tb[pair_link + e]
        src_part, dst_part = tb[link_src + link], tb[link_dst + link]
        other = dst_part if src_part == i else src_part
        if other != i and st[_RAN + other] != 0:
            continue  # copied when the other partition began
        for r in range(tb[link_ptr + link], tb[link_ptr + link + 1]):
            row = copies + 5 * r
            src, src_step, dst, dst_step = tb[row], tb[row + 1], tb[row + 2], tb[row + 3]
            for c in range(tb[row + 4]):
                data[unsigned(dst + c * dst_step)] = data[unsigned(src + c * src_step)]
    piece_ptr, piece_at = tb[PIECE_PTR], tb[PIECE_AT]
    piece_lo, piece_hi = tb[PIECE_LO], tb[PIECE_HI]
    runs, inbox = tb[PIECE_RUNS], halos[INBOX]
    for e in range(tb[piece_ptr + i], tb[piece_ptr + i + 1]):
        at = tb[piece_at + e]
        for r in range(tb[piece_lo + e], tb[piece_hi + e]):
            row = runs + 3 * r
            first, step, count = tb[row], tb[row + 1], tb[row + 2]
            for c in range(count):
                data[unsigned(first + c * step)] = inbox[unsigned(at + c)]
            at += count
    st[_RAN + i] = 1
    st[_LAST] = i
    if st.size > _RAN + n + t:  # timed: the task's copies
        st[_RAN + n + t] = now_ns() - start


#: A phase's row of the control array of a compiled run of phases
#: (:mod:`grapeshot.runtime.compiled_steps`): what :func:`phase_begins` sets before its call
#: (its round's parity, the news its tasks wait for, the news its last call tells, whether
#: its tasks copy their own halos) and :func:`phase_ends` writes after it (1 + the source of
#: a message of another round, whether a task waited).
CTL_ODD, CTL_EXPECT, CTL_TELL, CTL_FUSED, CTL_BAD, CTL_WAITED = range(6)


@njit(cache=True, nogil=True, _nrt=False)
def phase_begins(halos, ctl) -> None:
    """Set ``STATE`` for a phase's call as the runner does between phases: nothing begun
    (``ctl[CTL_FUSED]``), the news to wait for and to tell, nothing heard yet."""
    st = halos[STATE]
    n = st[_N]
    if ctl[CTL_FUSED] != 0:
        for i in range(n):
            st[_RAN + i] = 0
    st[_EXPECT] = ctl[CTL_EXPECT]
    if ctl[CTL_EXPECT] != 0:
        heard = _RAN + 3 * n
        for s in range(st[_S]):
            st[heard + s] = 0
    st[_NEWS] = ctl[CTL_TELL]


@njit(cache=True, nogil=True, _nrt=False)
def phase_ends(halos, n, halo_out, wait_out, latency_out, ctl) -> None:
    """After a phase's call of ``n`` tasks: its tasks' nanoseconds of copies into
    ``halo_out`` and of waiting into ``wait_out`` (``ctl[CTL_WAITED]``: whether any waited),
    each source's message time into ``latency_out``, a message of another round into
    ``ctl[CTL_BAD]``; nothing to wait for any more."""
    st = halos[STATE]
    size = st[_N]
    st[_EXPECT] = 0
    ctl[CTL_BAD] = st[_BAD]
    at = _RAN + size
    if st.size <= at:  # not timed: nothing copied, waited or heard
        return
    for t in range(n):
        halo_out[t] = st[at + t]
    if st[_WAITS] != 0:
        ctl[CTL_WAITED] = 1
        for t in range(n):
            wait_out[t] = st[at + size + t]
            st[at + size + t] = 0
        st[_WAITS] = 0
    latency = at + 2 * size + st[_S]
    for s in range(st[_S]):
        latency_out[s] = st[latency + s]


@njit(cache=True, nogil=True, _nrt=False)
def batch_ends(halos, stamps, n) -> None:
    """Pack the last task's part of the next phase's messages, send those the runner asked
    for (their send time and news), and stamp the batch's end."""
    st = halos[STATE]
    last = st[_LAST]
    if last >= 0:
        start = now_ns()
        _pack(halos, last)
        st[_LAST] = -1
        n_local = st[_N]
        if 0 < n <= n_local and st.size > _RAN + n_local:
            st[_RAN + n_local + n - 1] += now_ns() - start
    news = st[_NEWS]
    if news != 0:
        st[_NEWS] = 0
        outbox, tb = halos[OUTBOX], halos[TABLES]
        lo = tb[NEWS_AT]
        sent = wall_ns()
        for e in range(lo + 2, tb[NEWS_AT + 1]):
            head = tb[e]
            put_word(outbox, head + STEP * 8, step_of(news))
            put_word(outbox, head + PHASE * 8, tb[lo])
            put_word(outbox, head + KIND * 8, tb[lo + 1])
            put_word(outbox, head + SENT * 8, sent)
            put_word(outbox, head + ITEMS * 8, 0)
            publish(outbox, head + NEWS * 8, news)
    stamps[n] = now_ns()
