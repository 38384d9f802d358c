"""A ping-pong between ranks: what one message of each size costs on this machine.

The runtime sends one message per rank pair and round, all of about the same size, so its own
message log cannot separate latency from bandwidth. When a run is recorded, the driver
measures both directly: rank 0 exchanges messages of :data:`SIZES` bytes with every other
rank (even ranks with odd ones on larger runs would measure the same links), ``repeats`` round
trips each, and half of the best round trip is the one-way time (the best, because a
round trip can only be slowed by the other processes of a shared machine, never sped up).
"""

from __future__ import annotations

import time

import numpy as np

#: Message sizes probed, bytes: 8 B to 2 MiB, a factor of 8 apart.
SIZES = tuple(8**k for k in range(1, 8))
_TAG = 17


def ping_pong(comm, *, repeats: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """One-way seconds of messages of :data:`SIZES` bytes between rank 0 and every other rank.

    Returns ``(bytes, seconds)`` float64 arrays on rank 0 (one entry per peer and size) and
    empty arrays elsewhere. Collective: every rank of ``comm`` must call it.
    """
    rank, size = comm.Get_rank(), comm.Get_size()
    sizes, seconds = [], []
    buf = np.zeros(max(SIZES), dtype=np.uint8)
    for peer in range(1, size):
        for nbytes in SIZES:
            view = buf[:nbytes]
            comm.Barrier()
            best = np.inf
            for _ in range(repeats):
                if rank == 0:
                    t0 = time.perf_counter()
                    comm.Send(view, dest=peer, tag=_TAG)
                    comm.Recv(view, source=peer, tag=_TAG)
                    best = min(best, time.perf_counter() - t0)
                elif rank == peer:
                    comm.Recv(view, source=0, tag=_TAG)
                    comm.Send(view, dest=0, tag=_TAG)
            if rank == 0:
                sizes.append(float(nbytes))
                seconds.append(best / 2.0)
    return np.asarray(sizes), np.asarray(seconds)
