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

The tuple, by position (arrays int64 unless said; ``L`` local partitions):

0. ``data``: float64, the rank's arena of exchanged fields (every copy reads or writes it);
1. ``ran``: ``(L,)``, 1 once local partition ``i`` began in this phase;
2. ``pair_ptr``: ``(L + 1,)``, CSR into ``pair_link``: the local links touching ``i``;
3. ``pair_link``: link ids;
4. ``link_src``, 5. ``link_dst``: ``(n_links,)`` the partitions (positions) of each local link;
6. ``link_ptr``: ``(n_links + 1,)``, each link's range in ``src_idx``/``dst_idx``;
7. ``src_idx``, 8. ``dst_idx``: cells of ``data`` copied from, and to;
9. ``piece_ptr``: ``(L + 1,)``, CSR into the pieces of arrived messages landing in ``i``;
10. ``piece_at``: where a piece starts in ``inbox``; 11. ``piece_lo``, 12. ``piece_hi``: its
    range in ``ridx``;
13. ``ridx``: cells of ``data`` the pieces land in;
14. ``inbox``: float64, this phase's received messages;
15. ``halo_ns``: ``(L,)``, nanoseconds task ``t`` spent in copies;
16. ``out_ptr``: ``(L + 1,)``, CSR into the pieces of the next phase's messages ``i`` packs;
17. ``out_at``: where a piece goes in ``outbox``; 18. ``out_lo``, 19. ``out_hi``: its range
    in ``out_idx``;
20. ``out_idx``: cells of ``data`` packed;
21. ``outbox``: float64, the next phase's messages;
22. ``last``: ``(1,)``, the partition whose packing is still to do (``-1``: none).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.model.clock import now_ns


def no_halos(n_local: int) -> tuple:
    """A ``halos`` tuple with nothing to copy, for ``n_local`` partitions."""
    none = np.zeros(0, dtype=np.int64)
    ptr = np.zeros(n_local + 1, dtype=np.int64)
    empty = np.zeros(0, dtype=np.float64)
    return (
        empty, np.zeros(n_local, dtype=np.int64), ptr, none, none, none,
        np.zeros(1, dtype=np.int64), none, none, ptr, none, none, none, none, empty, none,
        ptr, none, none, none, none, empty, np.full(1, -1, dtype=np.int64),
    )  # fmt: skip


@njit(cache=True, nogil=True)
def _pack(halos, i) -> None:
    """Gather local partition ``i``'s pieces of the next phase's messages."""
    data, out_ptr, out_at, out_lo = halos[0], halos[16], halos[17], halos[18]
    out_hi, out_idx, outbox = halos[19], halos[20], halos[21]
    for e in range(out_ptr[i], out_ptr[i + 1]):
        at = out_at[e] - out_lo[e]
        for c in range(out_lo[e], out_hi[e]):
            outbox[at + c] = data[out_idx[c]]


@njit(cache=True, nogil=True)
def task_begins(halos, stamps, t, i) -> None:
    """Stamp task ``t`` (local partition ``i``) and make its halo copies (see the module)."""
    start = now_ns()
    stamps[t] = start
    last = halos[22]
    if last[0] >= 0:
        _pack(halos, last[0])
    data, ran = halos[0], halos[1]
    pair_ptr, pair_link, link_src, link_dst = halos[2], halos[3], halos[4], halos[5]
    link_ptr, src_idx, dst_idx = halos[6], halos[7], halos[8]
    for e in range(pair_ptr[i], pair_ptr[i + 1]):
        link = pair_link[e]
        other = link_dst[link] if link_src[link] == i else link_src[link]
        if other != i and ran[other] != 0:
            continue  # copied when the other partition began
        for c in range(link_ptr[link], link_ptr[link + 1]):
            data[dst_idx[c]] = data[src_idx[c]]
    piece_ptr, piece_at, piece_lo, piece_hi = halos[9], halos[10], halos[11], halos[12]
    ridx, inbox = halos[13], halos[14]
    for e in range(piece_ptr[i], piece_ptr[i + 1]):
        at = piece_at[e] - piece_lo[e]
        for c in range(piece_lo[e], piece_hi[e]):
            data[ridx[c]] = inbox[at + c]
    ran[i] = 1
    last[0] = i
    halo_ns = halos[15]
    if t < halo_ns.size:
        halo_ns[t] = now_ns() - start


@njit(cache=True, nogil=True)
def batch_ends(halos, stamps, n) -> None:
    """Pack the last task's part of the next phase's messages and stamp the batch's end."""
    last = halos[22]
    if last[0] >= 0:
        start = now_ns()
        _pack(halos, last[0])
        last[0] = -1
        halo_ns = halos[15]
        if 0 < n <= halo_ns.size:
            halo_ns[n - 1] += now_ns() - start
    stamps[n] = now_ns()
