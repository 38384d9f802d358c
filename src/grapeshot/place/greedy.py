"""Greedy rebalancing from measured loads (Charm++'s GreedyLB, the reactive baseline).

Partitions are taken heaviest first (ties: lower id first) and each goes to the node whose
load per core is lowest (ties: lower node id), so the result is deterministic.
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit

from grapeshot.model.errors import InputError


@njit(cache=True)
def _lpt(loads: np.ndarray, order: np.ndarray, cores: np.ndarray) -> np.ndarray:
    heap = [(0.0, j) for j in range(len(cores))]
    heapq.heapify(heap)
    node_of = np.empty(len(loads), dtype=np.int32)
    for i in range(len(order)):
        p = order[i]
        level, node = heapq.heappop(heap)
        node_of[p] = node
        heapq.heappush(heap, (level + loads[p] / cores[node], node))
    return node_of


def greedy_rebalance(loads: np.ndarray, cores: np.ndarray) -> np.ndarray:
    """A new ``node_of`` balancing measured per-partition ``loads`` over nodes.

    Parameters
    ----------
    loads
        float, ``(P,)``: measured load of each partition (seconds over the last window).
    cores
        int, ``(n,)``: cores of each node; a node's load is compared per core.

    Returns
    -------
    numpy.ndarray
        int32, ``(P,)``: the node of each partition.
    """
    loads = np.asarray(loads, dtype=np.float64)
    cores = np.asarray(cores, dtype=np.float64)
    if loads.ndim != 1 or cores.ndim != 1 or len(cores) == 0:
        raise InputError("loads/cores", "have the wrong shape", "1-D arrays, at least one node")
    if np.any(loads < 0) or not np.all(np.isfinite(loads)):
        raise InputError("loads", "has negative or non-finite entries", "loads >= 0")
    if np.any(cores <= 0):
        raise InputError("cores", "has entries <= 0", "cores >= 1")
    order = np.lexsort((np.arange(len(loads)), -loads))
    return _lpt(loads, order, cores)
