"""The communication matrix COM of one all-to-many personalized exchange, and Generate_Recv.

``COM[i, j]`` is the number of bytes rank ``i`` sends to rank ``j`` (int64, so a message may
exceed 2 GiB); row ``i`` is rank ``i``'s sending vector ``sendl_i``, column ``j`` is rank
``j``'s receiving vector ``recvl_j`` (Wang, Lin & Ranka 1993, section 2.1).

Each rank knows only its own sending vector. ``Generate_Recv`` tells every rank what it will
receive, in one of the two ways of the paper's table 3:

``concat``
    A global concatenate of the sending vectors: every rank holds all of COM (O(n^2) space).
``reduce_scatter``
    Figure 1: a parallel vector sum of the 0/1 send masks gives each rank the number of
    messages it expects; the sizes then travel as small point-to-point messages (O(n) space).

Both are given here as pure functions over the sending vectors (one process, used by the
simulator and the tests); :mod:`grapeshot.exchange.mpi_recv` runs them on MPI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from grapeshot.model.errors import InputError


@dataclass(frozen=True, eq=False)
class Pattern:
    """One exchange: ``com[i, j]`` bytes from rank ``i`` to rank ``j``.

    Attributes
    ----------
    com
        ``(n, n)`` int64, bytes; zero diagonal, no negative entries.
    name
        Where it came from (a spec string or a file name).
    meta
        Free-form facts about its generation (seed, d, unit, mesh points, ...).
    """

    com: np.ndarray
    name: str = "pattern"
    meta: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        com = np.asarray(self.com)
        if com.ndim != 2 or com.shape[0] != com.shape[1] or com.shape[0] < 1:
            raise InputError(f"{self.name}: com", f"shape {com.shape}", "a square n x n matrix")
        if not np.issubdtype(com.dtype, np.integer):
            raise InputError(f"{self.name}: com", f"dtype {com.dtype}", "integer bytes")
        com = com.astype(np.int64, copy=True)
        if (com < 0).any():
            i, j = np.argwhere(com < 0)[0]
            raise InputError(f"{self.name}: com[{i}, {j}]", f"got {com[i, j]}", "bytes >= 0")
        if np.diagonal(com).any():
            i = int(np.flatnonzero(np.diagonal(com))[0])
            raise InputError(f"{self.name}: com[{i}, {i}]", "a rank sends to itself", "0")
        com.setflags(write=False)
        object.__setattr__(self, "com", com)

    @property
    def n(self) -> int:
        """Number of ranks."""
        return int(self.com.shape[0])

    @property
    def messages(self) -> int:
        """Number of non-empty messages."""
        return int(np.count_nonzero(self.com))

    @property
    def total_bytes(self) -> int:
        """Bytes moved by the whole exchange."""
        return int(self.com.sum())

    @property
    def density(self) -> int:
        """``d``: the most messages any rank sends or receives."""
        nz = self.com > 0
        return int(max(nz.sum(axis=1).max(initial=0), nz.sum(axis=0).max(initial=0)))

    def scaled(self, factor: int) -> Pattern:
        """The same pattern with every size multiplied by ``factor`` (e.g. ``msg_unit``)."""
        return Pattern(self.com * int(factor), self.name, dict(self.meta, scaled=int(factor)))

    def summary(self) -> dict[str, float]:
        """Messages sent per rank (max/min/mean) and message sizes (max/min/mean), bytes."""
        nz = self.com > 0
        per_rank = nz.sum(axis=1)
        sizes = self.com[nz]
        return {
            "ranks": self.n,
            "messages": self.messages,
            "sent_max": int(per_rank.max()),
            "sent_min": int(per_rank.min()),
            "sent_mean": float(per_rank.mean()) if self.n else 0.0,
            "size_max": int(sizes.max(initial=0)),
            "size_min": int(sizes.min()) if sizes.size else 0,
            "size_mean": float(sizes.mean()) if sizes.size else 0.0,
            "bytes": self.total_bytes,
        }


def com_from_send_lists(
    send_lists: Sequence[Mapping[int, int]], *, name: str = "send lists"
) -> Pattern:
    """COM from every rank's sending list ``{destination: bytes}``.

    Parameters
    ----------
    send_lists
        ``send_lists[i]`` maps destination rank to bytes for rank ``i``; zero sizes are dropped.
    """
    n = len(send_lists)
    com = np.zeros((n, n), dtype=np.int64)
    for i, sends in enumerate(send_lists):
        for j, b in sends.items():
            if not isinstance(j, int | np.integer) or not 0 <= int(j) < n:
                raise InputError(f"{name}[{i}]", f"destination {j!r}", f"a rank in [0, {n})")
            if not isinstance(b, int | np.integer) or int(b) < 0:
                raise InputError(f"{name}[{i}][{j}]", f"bytes {b!r}", "an integer >= 0")
            com[i, int(j)] = int(b)
    return Pattern(com, name)


def recv_concat(sendl: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Generate_Recv by global concatenate: stack the rows into COM, read each column.

    Parameters
    ----------
    sendl
        ``n`` sending vectors, each ``(n,)`` int64 bytes.

    Returns
    -------
    list of ``(n,)`` int64: ``recvl[j][i]`` = bytes rank ``j`` receives from rank ``i``.
    """
    com = np.stack([np.asarray(s, dtype=np.int64) for s in sendl])
    return [com[:, j].copy() for j in range(com.shape[0])]


def recv_reduce_scatter(sendl: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Generate_Recv by figure 1: counts by a vector sum of masks, then sizes point to point.

    Returns ``(recv_cnt, recvl)``: ``recv_cnt[j]`` messages rank ``j`` expects (step 2) and
    each rank's receiving vector assembled from the ``(source, size)`` notes it was sent
    (step 3), checked against the count (step 4).
    """
    rows = [np.asarray(s, dtype=np.int64) for s in sendl]
    n = len(rows)
    recv_cnt = np.sum([(r > 0).astype(np.int64) for r in rows], axis=0) if n else np.zeros(0)
    recvl = [np.zeros(n, dtype=np.int64) for _ in range(n)]
    got = np.zeros(n, dtype=np.int64)
    for i, row in enumerate(rows):
        for j in np.flatnonzero(row):
            recvl[j][i] = row[j]
            got[j] += 1
    if not np.array_equal(got, recv_cnt):
        raise AssertionError("Generate_Recv: notes received differ from the counts")
    return np.asarray(recv_cnt, dtype=np.int64), recvl
