"""The kernel's event heap: (time, sequence number) order, so equal times keep push order.

An event is a time and a payload ``item << _KIND_BITS | kind``: ``item`` is a task id (for
``TASK_END`` and ``READY``) or a partition id (``PART_START``). Sequence numbers are unique, so
the order is total and any correct priority queue pops the same events in the same order.

The heap is 4-ary and its entries are interleaved records of one float64 array
(:attr:`grapeshot.sim.kernel_state.Clocks.heap`): entry ``i`` is ``heap[4 j : 4 j + 4]``,
``j = i + 3``, holding the time, the sequence number, the payload and a task end's core
(integers below ``2**53``, exact as floats; the core rides in what was padding, so a task's
end reads it from its entry rather than from the task records, a cache miss per task). A
node's four children are one aligned run of 128 bytes (two cache lines), where the former
binary heap of three separate arrays touched up to six lines per level, with twice the
levels. On a run of a million partitions over 8192 nodes the heap holds a quarter of a
million events or more and its lower levels live in the last-level cache or beyond: a pop
walks down one child per level, each a miss that waited for the one before, so the pop asks
for all sixteen grandchildren (eight lines) before it compares the children, and the next
level's misses overlap the comparisons (pops 25-40 % faster on such a heap; a two-level
heap, one per node under a heap of nodes, was tried and was slower). The counters live in
:class:`grapeshot.sim.kernel_state.Clocks`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.sim.kernel_state import C_EVENTS, C_SEQ, HEAP_OFFSET, HEAP_SLOTS, Clocks
from grapeshot.sim.prefetch import prefetch

TASK_END, READY, PART_START = 0, 1, 2
_KIND_BITS = 2
_KIND_MASK = 3
SLOTS = HEAP_SLOTS
OFFSET = HEAP_OFFSET


@njit(cache=True, inline="always")
def _before(h: np.ndarray, a: int, t: float, seq: float) -> bool:
    """Whether the entry at slot ``a`` comes before ``(t, seq)``."""
    ta = h[a]
    return ta < t or (ta == t and h[a + 1] < seq)


@njit(cache=True, inline="always")
def _heap_push(h: np.ndarray, n: int, t: float, seq: int, payload: int, core: int) -> int:
    """Sift ``(t, seq, payload, core)`` up into a heap of ``n`` entries; return ``n + 1``."""
    s = float(seq)
    i = n
    while i > 0:
        parent = (i - 1) >> 2
        ps = SLOTS * (parent + OFFSET)
        if _before(h, ps, t, s):
            break
        js = SLOTS * (i + OFFSET)
        h[js] = h[ps]
        h[js + 1] = h[ps + 1]
        h[js + 2] = h[ps + 2]
        h[js + 3] = h[ps + 3]
        i = parent
    js = SLOTS * (i + OFFSET)
    h[js] = t
    h[js + 1] = s
    h[js + 2] = float(payload)
    h[js + 3] = float(core)
    return n + 1


@njit(cache=True, inline="always")
def _heap_pop(h: np.ndarray, n: int):
    """Remove the top of a heap of ``n`` entries; return its time, payload and core, and
    ``n - 1``."""
    top = SLOTS * OFFSET
    top_t = h[top]
    top_p = np.int64(h[top + 2])
    top_c = np.int64(h[top + 3])
    n -= 1
    if n > 0:
        last = SLOTS * (n + OFFSET)
        t = h[last]
        s = h[last + 1]
        p = h[last + 2]
        c_last = h[last + 3]
        i = 0
        while True:
            c = 4 * i + 1
            if c >= n:
                break
            best = c
            bs = SLOTS * (c + OFFSET)
            end = c + 4 if c + 4 <= n else n
            # Every child's children (two lines each), asked for before the comparisons pick
            # the child to follow: the next level's misses overlap this level's work.
            g = 4 * c + 1
            if g < n:
                for k in range(4):
                    gs = SLOTS * (g + 4 * k + OFFSET)
                    prefetch(h, gs)
                    prefetch(h, gs + 8)
            for k in range(c + 1, end):
                ks = SLOTS * (k + OFFSET)
                if _before(h, ks, h[bs], h[bs + 1]):
                    best = k
                    bs = ks
            if not _before(h, bs, t, s):
                break
            js = SLOTS * (i + OFFSET)
            h[js] = h[bs]
            h[js + 1] = h[bs + 1]
            h[js + 2] = h[bs + 2]
            h[js + 3] = h[bs + 3]
            i = best
        js = SLOTS * (i + OFFSET)
        h[js] = t
        h[js + 1] = s
        h[js + 2] = p
        h[js + 3] = c_last
    return top_t, top_p, top_c, n


@njit(cache=True, inline="always")
def push_event(clk: Clocks, t: float, item: int, kind: int, core: int) -> None:
    """Schedule event ``kind`` of ``item`` at time ``t`` (s); ``core``: a task end's core
    (0 for the other kinds)."""
    seq = clk.ctr[C_SEQ]
    payload = (item << _KIND_BITS) | kind
    clk.ctr[C_EVENTS] = _heap_push(clk.heap, clk.ctr[C_EVENTS], t, seq, payload, core)
    clk.ctr[C_SEQ] = seq + 1


@njit(cache=True, inline="always")
def pop_event(clk: Clocks):
    """Take the earliest event; return ``(time, kind, item, core)`` (s, int, int, int)."""
    t, payload, core, n = _heap_pop(clk.heap, clk.ctr[C_EVENTS])
    clk.ctr[C_EVENTS] = n
    return t, payload & _KIND_MASK, payload >> _KIND_BITS, core


@njit(cache=True, inline="always")
def peek_event(clk: Clocks):
    """The earliest event's ``(kind, item)``, left in place (the heap must not be empty)."""
    payload = np.int64(clk.heap[SLOTS * OFFSET + 2])
    return payload & _KIND_MASK, payload >> _KIND_BITS
