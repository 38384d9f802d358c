"""What the runtime checks after a batch call, in one compiled pass (no numpy per check)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def batch_verdict(
    positions: np.ndarray,
    stamps: np.ndarray,
    ran: np.ndarray,
    check_ran: bool,
    status: np.ndarray,
    status_bases: np.ndarray,
) -> tuple[bool, np.ndarray]:
    """``(kept the protocol, positions to check)`` after a batch ran ``positions``.

    The protocol (:mod:`grapeshot.model.task_halos`): every stamp written, and, where the
    tasks copy their own halos (``check_ran``), every partition begun. The positions to check
    are those whose status word (``status[status_bases[i]]``) is not ``-1``; with no status
    (``status`` empty), all of them.
    """
    ok = True
    for t in range(stamps.size):
        if stamps[t] == 0:
            ok = False
    if check_ran:
        for t in range(positions.size):
            if ran[positions[t]] == 0:
                ok = False
    if status.size == 0:
        return ok, positions
    flagged = np.empty(positions.size, dtype=np.int64)
    n = 0
    for t in range(positions.size):
        if status[status_bases[positions[t]]] != -1:
            flagged[n] = positions[t]
            n += 1
    return ok, flagged[:n]
