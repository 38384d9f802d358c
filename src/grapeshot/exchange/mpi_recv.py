"""Generate_Recv on MPI (table 3 of Wang, Lin & Ranka): every rank learns what it receives.

``concat``          ``Allgather`` of the sending vectors: every rank gets all of COM, O(n^2).
``reduce_scatter``  Figure 1: ``Reduce_scatter_block`` of the 0/1 masks gives each rank its
                    message count; the sizes then arrive as one 8-byte message per pair (the
                    paper's Active Messages), O(n) space.
"""

from __future__ import annotations

import numpy as np

#: Tag of the size notes of Generate_Recv.
TAG_RECV = 9_100


def recv_concat(sendl: np.ndarray, *, comm) -> np.ndarray:
    """COM ``(n, n)`` int64 on every rank, from each rank's ``(n,)`` sending vector."""
    n = comm.Get_size()
    sendl = np.ascontiguousarray(sendl, dtype=np.int64)
    com = np.empty((n, n), dtype=np.int64)
    comm.Allgather(sendl, com)
    return com


def recv_reduce_scatter(sendl: np.ndarray, *, comm) -> np.ndarray:
    """This rank's receiving vector ``(n,)`` int64 by figure 1 (counts, then size notes)."""
    from mpi4py import MPI

    n = comm.Get_size()
    sendl = np.ascontiguousarray(sendl, dtype=np.int64)
    mask = (sendl > 0).astype(np.int64)
    count = np.zeros(1, dtype=np.int64)
    comm.Reduce_scatter_block(mask, count, op=MPI.SUM)
    notes = [np.array([sendl[j]], dtype=np.int64) for j in np.flatnonzero(sendl)]
    reqs = [
        comm.Isend(note, dest=int(j), tag=TAG_RECV)
        for note, j in zip(notes, np.flatnonzero(sendl), strict=True)
    ]
    recvl = np.zeros(n, dtype=np.int64)
    buf = np.zeros(1, dtype=np.int64)
    status = MPI.Status()
    for _ in range(int(count[0])):
        comm.Recv(buf, source=MPI.ANY_SOURCE, tag=TAG_RECV, status=status)
        recvl[status.Get_source()] = buf[0]
    for r in reqs:
        r.Wait()
    return recvl
