"""Items sorted by group: a stable counting sort, shared by placement and the simulator."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def counting_order(label, n_groups):
    """Stable counting sort of ``label`` (int64 ids in ``[0, n_groups)``): ``(order, ptr)``;
    callable from compiled code (:func:`group_order` is the checked call from Python).

    ``order[ptr[g]:ptr[g + 1]]`` lists the items of group ``g`` in increasing order; the same
    as ``np.argsort(label, kind="stable")`` in O(n) instead of O(n log n).
    """
    ptr = np.zeros(n_groups + 1, dtype=np.int64)
    for i in range(label.shape[0]):
        ptr[label[i] + 1] += 1
    for g in range(n_groups):
        ptr[g + 1] += ptr[g]
    fill = ptr[:-1].copy()
    order = np.empty(label.shape[0], dtype=np.int64)
    for i in range(label.shape[0]):
        g = label[i]
        order[fill[g]] = i
        fill[g] += 1
    return order, ptr


def group_order(label: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Items sorted by group, stably, and each group's slice: ``(order, ptr)``, int64.

    Parameters
    ----------
    label
        int ``(n,)``: group of every item, in ``[0, n_groups)``.
    n_groups
        Number of groups.
    """
    return counting_order(np.ascontiguousarray(label, dtype=np.int64), int(n_groups))
