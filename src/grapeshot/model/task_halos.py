"""A batched task's own halo copies: what :func:`task_begins` and :func:`batch_ends` do.

The task runtime hands every :class:`~grapeshot.model.program.Batch` call a ``halos`` tuple.
Where the runtime fuses halo exchanges into tasks (one thread per rank, grid fields of
float64), the tuple lists, per partition, the copies its task makes:

- before its kernel, the halos of *this* phase's exchange: with the partitions of the same
  rank, both ways with every neighbour that has not begun yet in this phase (its cells still
  hold what the phase must see), and the pieces of the messages from other ranks that land
  in its ghost cells;
- after its kernel, its part of the *next* phase's messages to other ranks, packed while its
  cells are still in cache (its values are final then: only its own kernel writes them).

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

The tuple, by position (named by the constants below; arrays int64 unless said; ``L`` local
partitions):

- ``DATA``: float64, the rank's arena of exchanged fields (every copy reads or writes it);
- ``RAN``: ``(L,)``, 1 once local partition ``i`` began in this phase;
- ``PAIR_PTR``: ``(L + 1,)``, CSR into ``PAIR_LINK``: the local links touching ``i``;
- ``PAIR_LINK``: link ids;
- ``LINK_SRC``, ``LINK_DST``: ``(n_links,)`` the partitions (positions) of each local link;
- ``LINK_PTR``: ``(n_links + 1,)``, each link's range of rows in ``COPY_RUNS``;
- ``COPY_RUNS``: ``(runs, 5)``: source cell, source step, destination cell, destination step,
  count, in ``DATA``;
- ``PIECE_PTR``: ``(L + 1,)``, CSR into the pieces of arrived messages landing in ``i``;
- ``PIECE_AT``: where a piece starts in ``INBOX``; ``PIECE_LO``, ``PIECE_HI``: its range of
  rows in ``PIECE_RUNS``;
- ``PIECE_RUNS``: ``(runs, 3)``: first cell, step, count in ``DATA``, filled from the
  piece's consecutive words of ``INBOX``;
- ``INBOX``: float64, this phase's received messages;
- ``HALO_NS``: ``(L,)``, nanoseconds task ``t`` spent in copies;
- ``OUT_PTR``: ``(L + 1,)``, CSR into the pieces of the next phase's messages ``i`` packs;
- ``OUT_AT``: where a piece goes in ``OUTBOX``; ``OUT_LO``, ``OUT_HI``: its range of rows in
  ``OUT_RUNS``;
- ``OUT_RUNS``: ``(runs, 3)``: first cell, step, count in ``DATA``, packed into the piece's
  consecutive words of ``OUTBOX``;
- ``OUTBOX``: float64, the next phase's messages;
- ``LAST``: ``(1,)``, the partition whose packing is still to do (``-1``: none).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.model.clock import now_ns

#: The positions of the ``halos`` tuple (see the module).
(
    DATA, RAN, PAIR_PTR, PAIR_LINK, LINK_SRC, LINK_DST, LINK_PTR, COPY_RUNS, PIECE_PTR,
    PIECE_AT, PIECE_LO, PIECE_HI, PIECE_RUNS, INBOX, HALO_NS, OUT_PTR, OUT_AT, OUT_LO, OUT_HI,
    OUT_RUNS, OUTBOX, LAST,
) = range(22)  # fmt: skip
#: The entries :func:`grapeshot.runtime.halo_plan.fused_halos` gives, and
#: :func:`~grapeshot.runtime.halo_plan.fused_packs`.
OWN_COPIES = slice(PAIR_PTR, INBOX)
PACKS = slice(OUT_PTR, OUTBOX)


def no_halos(n_local: int) -> tuple:
    """A ``halos`` tuple with nothing to copy, for ``n_local`` partitions."""
    none = np.zeros(0, dtype=np.int64)
    ptr = np.zeros(n_local + 1, dtype=np.int64)
    empty = np.zeros(0, dtype=np.float64)
    return (
        empty, np.zeros(n_local, dtype=np.int64), ptr, none, none, none,
        np.zeros(1, dtype=np.int64), np.zeros((0, 5), dtype=np.int64), ptr, none, none, none,
        np.zeros((0, 3), dtype=np.int64), empty, none, ptr, none, none, none,
        np.zeros((0, 3), dtype=np.int64), empty, np.full(1, -1, dtype=np.int64),
    )  # fmt: skip


@njit(cache=True, nogil=True)
def _pack(halos, i) -> None:
    """Gather local partition ``i``'s pieces of the next phase's messages."""
    data, out_ptr, out_at = halos[DATA], halos[OUT_PTR], halos[OUT_AT]
    out_lo, out_hi, runs, outbox = halos[OUT_LO], halos[OUT_HI], halos[OUT_RUNS], halos[OUTBOX]
    for e in range(out_ptr[i], out_ptr[i + 1]):
        at = out_at[e]
        for r in range(out_lo[e], out_hi[e]):
            first, step, count = runs[r, 0], runs[r, 1], runs[r, 2]
            for c in range(count):
                outbox[at + c] = data[first + c * step]
            at += count


@njit(cache=True, nogil=True)
def task_begins(halos, stamps, t, i) -> None:
    """Stamp task ``t`` (local partition ``i``) and make its halo copies (see the module)."""
    start = now_ns()
    stamps[t] = start
    last = halos[LAST]
    if last[0] >= 0:
        _pack(halos, last[0])
    data, ran = halos[DATA], halos[RAN]
    pair_ptr, pair_link, link_src, link_dst = (
        halos[PAIR_PTR], halos[PAIR_LINK], halos[LINK_SRC], halos[LINK_DST],
    )  # fmt: skip
    link_ptr, copies = halos[LINK_PTR], halos[COPY_RUNS]
    for e in range(pair_ptr[i], pair_ptr[i + 1]):
        link = pair_link[e]
        other = link_dst[link] if link_src[link] == i else link_src[link]
        if other != i and ran[other] != 0:
            continue  # copied when the other partition began
        for r in range(link_ptr[link], link_ptr[link + 1]):
            src, src_step, dst, dst_step = copies[r, 0], copies[r, 1], copies[r, 2], copies[r, 3]
            for c in range(copies[r, 4]):
                data[dst + c * dst_step] = data[src + c * src_step]
    piece_ptr, piece_at, piece_lo, piece_hi = (
        halos[PIECE_PTR], halos[PIECE_AT], halos[PIECE_LO], halos[PIECE_HI],
    )  # fmt: skip
    runs, inbox = halos[PIECE_RUNS], halos[INBOX]
    for e in range(piece_ptr[i], piece_ptr[i + 1]):
        at = piece_at[e]
        for r in range(piece_lo[e], piece_hi[e]):
            first, step, count = runs[r, 0], runs[r, 1], runs[r, 2]
            for c in range(count):
                data[first + c * step] = inbox[at + c]
            at += count
    ran[i] = 1
    last[0] = i
    halo_ns = halos[HALO_NS]
    if t < halo_ns.size:
        halo_ns[t] = now_ns() - start


@njit(cache=True, nogil=True)
def batch_ends(halos, stamps, n) -> None:
    """Pack the last task's part of the next phase's messages and stamp the batch's end."""
    last = halos[LAST]
    if last[0] >= 0:
        start = now_ns()
        _pack(halos, last[0])
        last[0] = -1
        halo_ns = halos[HALO_NS]
        if 0 < n <= halo_ns.size:
            halo_ns[n - 1] += now_ns() - start
    stamps[n] = now_ns()
