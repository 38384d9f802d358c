"""The kernel's event heap: (time, sequence number) order, so equal times keep push order.

An event is a time and a payload ``item << _KIND_BITS | kind``: ``item`` is a task id (for
``TASK_END`` and ``READY``) or a partition id (``PART_START``). The heap's arrays and counters
live in :class:`grapeshot.sim.kernel_state.Clocks`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.sim.kernel_state import C_EVENTS, C_SEQ, Clocks

TASK_END, READY, PART_START = 0, 1, 2
_KIND_BITS = 2
_KIND_MASK = 3


@njit(cache=True, inline="always")
def _heap_push(ht: np.ndarray, hs: np.ndarray, hp: np.ndarray, n, t, seq, payload) -> int:
    """Sift ``(t, seq, payload)`` up into a heap of ``n`` entries; return ``n + 1``."""
    i = n
    while i > 0:
        parent = (i - 1) >> 1
        pt = ht[parent]
        if pt < t or (pt == t and hs[parent] < seq):
            break
        ht[i] = pt
        hs[i] = hs[parent]
        hp[i] = hp[parent]
        i = parent
    ht[i] = t
    hs[i] = seq
    hp[i] = payload
    return n + 1


@njit(cache=True, inline="always")
def _heap_pop(ht: np.ndarray, hs: np.ndarray, hp: np.ndarray, n):
    """Remove the top of a heap of ``n`` entries; return its (time, payload) and ``n - 1``."""
    top_t = ht[0]
    top_p = hp[0]
    n -= 1
    if n > 0:
        t = ht[n]
        s = hs[n]
        p = hp[n]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            r = c + 1
            if r < n and (ht[r] < ht[c] or (ht[r] == ht[c] and hs[r] < hs[c])):
                c = r
            if t < ht[c] or (t == ht[c] and s < hs[c]):
                break
            ht[i] = ht[c]
            hs[i] = hs[c]
            hp[i] = hp[c]
            i = c
        ht[i] = t
        hs[i] = s
        hp[i] = p
    return top_t, top_p, n


@njit(cache=True, inline="always")
def push_event(clk: Clocks, t: float, item: int, kind: int) -> None:
    """Schedule event ``kind`` of ``item`` at time ``t`` (s)."""
    seq = clk.ctr[C_SEQ]
    clk.ctr[C_EVENTS] = _heap_push(
        clk.ht, clk.hs, clk.hp, clk.ctr[C_EVENTS], t, seq, (item << _KIND_BITS) | kind
    )
    clk.ctr[C_SEQ] = seq + 1


@njit(cache=True, inline="always")
def pop_event(clk: Clocks):
    """Take the earliest event; return ``(time, kind, item)`` (s, int, int)."""
    t, payload, n = _heap_pop(clk.ht, clk.hs, clk.hp, clk.ctr[C_EVENTS])
    clk.ctr[C_EVENTS] = n
    return t, payload & _KIND_MASK, payload >> _KIND_BITS
