"""Greedy rebalancing from measured loads (Charm++'s GreedyLB, the reactive baseline).

Partitions are taken heaviest first (ties: lower id first) and each goes to the node whose
load per core is lowest (ties: lower node id), so the result is deterministic. The algorithm
(LPT) is :func:`grapeshot.place.balancers.greedy_lb`; this is its int32 form for callers that
store a partition's node as ``int32`` (the runtime's migration, the Z-Model's ``greedy``
split).
"""

from __future__ import annotations

import numpy as np

from grapeshot.place.balancers import greedy_lb


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

    Raises
    ------
    InputError
        On loads or cores of the wrong shape, negative or non-finite loads, or cores <= 0
        (:func:`grapeshot.place.balancers.check_loads`).
    """
    return greedy_lb(loads, cores).astype(np.int32)
