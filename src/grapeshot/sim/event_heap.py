"""The kernel's event heap: (time, push order) order, so equal times keep push order.

An event is a time and a payload ``item << _KIND_BITS | kind``: ``item`` is a task id (for
``TASK_END`` and ``READY``) or a partition id (``PART_START``). The order is total (time, then
the order of the pushes), so any correct priority queue pops the same events in the same
order; this one is a *radix heap*, which relies on what a discrete-event simulation
guarantees: no event is scheduled before the last one popped (a task ends at its start plus
its duration, a ``READY`` is pushed only for a start later than now, the ``PART_START`` of a
segment before its first pop).

Keys are the times' bits (:func:`grapeshot.sim.bits.float_bits`; for non-negative floats
they are in the floats' order, the sign bit cleared so that ``-0.0`` is ``0.0``). An event
of key ``k`` lives in bucket ``bit_length(k ^ last)``, ``last`` the key last popped: bucket 0
holds the events of the time being popped, bucket ``b`` those that agree with ``last`` above
bit ``b - 1``. A pop takes the first of bucket 0, or, if it is empty, empties the lowest
non-empty bucket into the lower ones around its least key, which becomes ``last`` (an event
moves at most 63 times, each time to a lower bucket). Each bucket is a list of blocks of
``HEAP_BLOCK`` entries filled in push order, and is emptied in that order, so every bucket
is always in push order: bucket 0's first entry is the least (time, push) of all, and no
sequence number is needed.

Why not the former 4-ary heap: on a run of a million partitions over 8192 nodes the heap
holds a quarter of a million events or more, sharing the last-level cache with the
partition records, and each pop walked a chain of dependent misses down its levels (about
15 % of the loop, its largest single share, with the next level prefetched). Here pushes
write to the last block of a bucket (the few dozen in use stay in cache) and a bucket is
emptied by reading its blocks in order, which the hardware prefetches: that run's loop takes
49 s of CPU rather than 61 (``docs/simulator.md``). The blocks are allocated with the records
(:func:`grapeshot.sim.kernel_state.new_heap`), as the kernel cannot allocate; the bucket
table, the block links and the counters are :class:`grapeshot.sim.kernel_state.Clocks`'s.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.sim.bits import bit_length, bits_float, float_bits, lowest_bit
from grapeshot.sim.kernel_state import (
    B_AT,
    B_FILL,
    B_HEAD,
    B_MIN,
    B_POS,
    B_TAIL,
    C_EVENTS,
    C_FREE,
    C_LAST,
    C_MASK,
    HEAP_BLOCK,
    HEAP_SLOTS,
    Clocks,
)

TASK_END, READY, PART_START = 0, 1, 2
_KIND_BITS = 2
_KIND_MASK = 3
_KEY_MASK = (1 << 63) - 1  # a time's bits without the sign: -0.0 is 0.0


@njit(cache=True, inline="always")
def _new_block(clk: Clocks) -> int:
    """Take a block off the free stack."""
    blk = clk.ctr[C_FREE]
    clk.ctr[C_FREE] = clk.links[blk]
    return blk


@njit(cache=True, inline="always")
def _free_block(clk: Clocks, blk: int) -> None:
    """Put ``blk`` back on the free stack (its next fill finds it in cache)."""
    clk.links[blk] = clk.ctr[C_FREE]
    clk.ctr[C_FREE] = blk


@njit(cache=True, inline="always")
def _append(clk: Clocks, b: int, bits: int, payload: int, core: int) -> None:
    """Put an entry (time ``bits``, ``payload``, ``core``) at the end of bucket ``b``."""
    bk = clk.buckets
    key = bits & _KEY_MASK
    tail = bk[b, B_TAIL]
    fill = bk[b, B_FILL]
    if tail < 0:
        tail = _new_block(clk)
        bk[b, B_HEAD] = tail
        bk[b, B_POS] = 0
        bk[b, B_MIN] = key
        bk[b, B_AT] = tail * HEAP_BLOCK
        fill = 0
        clk.ctr[C_MASK] |= np.int64(1) << b
    elif fill == HEAP_BLOCK:
        blk = _new_block(clk)
        clk.links[tail] = blk
        tail = blk
        fill = 0
    e = tail * HEAP_BLOCK + fill
    if key < bk[b, B_MIN]:  # strictly: of equal keys the first pushed stays the least
        bk[b, B_MIN] = key
        bk[b, B_AT] = e
    bk[b, B_TAIL] = tail
    bk[b, B_FILL] = fill + 1
    h = clk.heap
    h[HEAP_SLOTS * e] = bits
    h[HEAP_SLOTS * e + 1] = payload
    h[HEAP_SLOTS * e + 2] = core


@njit(cache=True, inline="always")
def _spill(clk: Clocks, i: int) -> None:
    """Empty bucket ``i >= 1`` (the lowest non-empty one) into the buckets below it, about its
    least key, the next ``last``; in push order, so each keeps push order."""
    bk, h = clk.buckets, clk.heap
    last = bk[i, B_MIN]
    clk.ctr[C_LAST] = last
    blk, tail, fill = bk[i, B_HEAD], bk[i, B_TAIL], bk[i, B_FILL]
    bk[i, B_HEAD] = -1
    bk[i, B_TAIL] = -1
    clk.ctr[C_MASK] &= ~(np.int64(1) << i)
    while True:
        n = fill if blk == tail else HEAP_BLOCK
        for e in range(blk * HEAP_BLOCK, blk * HEAP_BLOCK + n):
            bits = h[HEAP_SLOTS * e]
            b = bit_length((bits & _KEY_MASK) ^ last)
            _append(clk, b, bits, h[HEAP_SLOTS * e + 1], h[HEAP_SLOTS * e + 2])
        nxt = clk.links[blk]
        _free_block(clk, blk)
        if blk == tail:
            break
        blk = nxt


@njit(cache=True, inline="always")
def push_event(clk: Clocks, t: float, item: int, kind: int, core: int) -> None:
    """Schedule event ``kind`` of ``item`` at time ``t`` (s, no earlier than the last event
    popped); ``core``: a task end's core (0 for the other kinds)."""
    bits = float_bits(t)
    b = bit_length((bits & _KEY_MASK) ^ clk.ctr[C_LAST])
    _append(clk, b, bits, (item << _KIND_BITS) | kind, core)
    clk.ctr[C_EVENTS] += 1


@njit(cache=True, inline="always")
def pop_event(clk: Clocks):
    """Take the earliest event; return ``(time, kind, item, core)`` (s, int, int, int)."""
    if clk.ctr[C_MASK] & 1 == 0:
        _spill(clk, lowest_bit(clk.ctr[C_MASK]))
    bk, h = clk.buckets, clk.heap
    head, pos = bk[0, B_HEAD], bk[0, B_POS]
    e = head * HEAP_BLOCK + pos
    t = bits_float(h[HEAP_SLOTS * e])
    payload = h[HEAP_SLOTS * e + 1]
    core = h[HEAP_SLOTS * e + 2]
    pos += 1
    if head == bk[0, B_TAIL]:
        if pos == bk[0, B_FILL]:  # bucket 0 is empty
            _free_block(clk, head)
            bk[0, B_HEAD] = -1
            bk[0, B_TAIL] = -1
            clk.ctr[C_MASK] &= ~np.int64(1)
        else:
            bk[0, B_POS] = pos
    elif pos == HEAP_BLOCK:
        bk[0, B_HEAD] = clk.links[head]
        bk[0, B_POS] = 0
        _free_block(clk, head)
    else:
        bk[0, B_POS] = pos
    clk.ctr[C_EVENTS] -= 1
    return t, payload & _KIND_MASK, payload >> _KIND_BITS, core


@njit(cache=True, inline="always")
def peek_event(clk: Clocks):
    """The earliest event's ``(kind, item)``, left in place (the heap must not be empty).

    It is the event the next pop takes unless a push comes first with an earlier time (a
    guess for prefetching, then): the first of bucket 0, else the least of the lowest
    non-empty bucket, which is not spilled yet, since a push may still land below it.
    """
    bk = clk.buckets
    mask = clk.ctr[C_MASK]
    if mask & 1:
        e = bk[0, B_HEAD] * HEAP_BLOCK + bk[0, B_POS]
    else:
        e = bk[lowest_bit(mask), B_AT]
    payload = clk.heap[HEAP_SLOTS * e + 1]
    return payload & _KIND_MASK, payload >> _KIND_BITS
