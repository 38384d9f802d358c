"""Per-node accounting in the kernel: busy cores over time and communication hidden by them.

Each node keeps one row of ``Clocks.nst`` (columns ``N_*`` of
:mod:`grapeshot.sim.kernel_state`). ``N_BINT`` integrates the busy cores over time. The time
with inter-node messages in flight towards the node is the union of their send-to-delivery
intervals; because sends are processed in time order that union is kept as one open span
``[N_C0, N_C1]``, closed when the clock passes its end: its length goes to ``N_COMM`` and the
busy-core integral over it, per core, to ``N_HID`` (the communication hidden by computation).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.sim.kernel_state import (
    N_BINT,
    N_BUSY,
    N_C0,
    N_C1,
    N_CB0,
    N_COMM,
    N_CON,
    N_CORES,
    N_HID,
    N_LAST,
)


@njit(cache=True, inline="always")
def advance(nst: np.ndarray, node: int, t: float) -> None:
    """Move node ``node``'s clock to ``t`` (s): integrate its busy cores, close a passed span."""
    lt = nst[node, N_LAST]
    if t < lt:
        return
    if nst[node, N_CON] != 0.0 and nst[node, N_C1] <= t:
        end = nst[node, N_C1]
        b_end = nst[node, N_BINT] + nst[node, N_BUSY] * (end - lt)
        nst[node, N_COMM] += end - nst[node, N_C0]
        nst[node, N_HID] += (b_end - nst[node, N_CB0]) / nst[node, N_CORES]
        nst[node, N_CON] = 0.0
    nst[node, N_BINT] += nst[node, N_BUSY] * (t - lt)
    nst[node, N_LAST] = t


@njit(cache=True, inline="always")
def join_span(nst: np.ndarray, node: int, t: float, arrive: float) -> None:
    """A message towards ``node`` is in flight from ``t`` to ``arrive`` (s, ``arrive > t``).

    Its interval extends the node's open span or opens one; the clock must be at ``t``.
    """
    if nst[node, N_CON] != 0.0:
        if arrive > nst[node, N_C1]:
            nst[node, N_C1] = arrive
    else:
        nst[node, N_CON] = 1.0
        nst[node, N_C0] = t
        nst[node, N_C1] = arrive
        nst[node, N_CB0] = nst[node, N_BINT]


@njit(cache=True)
def close_spans(nst: np.ndarray, t: float, comm_time: np.ndarray, hidden_time: np.ndarray) -> None:
    """At the segment's last event ``t`` (s): add every node's communication integrals."""
    for k in range(nst.shape[0]):
        advance(nst, k, t)
        comm_time[k] += nst[k, N_COMM]
        hidden_time[k] += nst[k, N_HID]
