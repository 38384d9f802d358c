"""Cyclic (round-robin) placement: consecutive partitions go to different nodes.

The opposite of a geometric placement: neighbouring partitions (consecutive flat ids) land on
different nodes, which spreads a localised hot spot over many nodes at the price of cutting
almost every halo. It is Canary's "default" (OrderedEvenly) placement, and the deterministic
counterpart of Birdshot's random one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grapeshot.model.seed import SeedLike, as_generator
from grapeshot.place.quota import check_cores, check_static_inputs


def place_cyclic(
    parts_shape: tuple[int, ...], cores: Sequence[int] | np.ndarray, *, seed: SeedLike
) -> np.ndarray:
    """Deal partitions to nodes in turn, in proportion to their cores.

    With equal cores, partition ``i`` goes to node ``i mod n``. With heterogeneous cores, node
    ``k``'s ``j``-th partition (``0 <= j < quota[k]``) sits at the fractional position
    ``(j + 1/2) / quota[k]`` of the sequence, and partitions are dealt in the order of those
    positions, ties to the lower node id: every node's partitions are spread evenly over the
    id range, and a node with twice the quota comes up twice as often.

    Parameters
    ----------
    parts_shape
        Partitions per axis of the 2D or 3D grid; ``P = prod(parts_shape)``. Partition ids
        flatten the grid in C order.
    cores
        Cores of each node, shape ``(n,)``, integers ``>= 1``.
    seed
        Validated like every strategy's seed, then unused: the deal is deterministic.

    Returns
    -------
    numpy.ndarray
        int32, shape ``(P,)``: the node of each partition; node ``k`` holds exactly
        ``quotas(P, cores)[k]`` partitions.

    Raises
    ------
    InputError
        On an invalid grid, core counts or seed.
    """
    _, quota = check_static_inputs(parts_shape, cores)
    as_generator(seed)  # same contract as the random strategies; no randomness is drawn
    n_nodes = quota.size
    n_parts = int(quota.sum())
    c = check_cores(cores)
    if np.all(c == c[0]):
        # Equal nodes: the plain deal. Its counts are the quotas (the first P mod n nodes get
        # the extra partition, exactly as the largest-remainder tie rule gives them).
        return (np.arange(n_parts, dtype=np.int64) % n_nodes).astype(np.int32)
    node = np.repeat(np.arange(n_nodes, dtype=np.int32), quota)
    # j = rank of each slot within its node's run of slots.
    run_start = np.repeat(np.cumsum(quota) - quota, quota)
    j = np.arange(n_parts, dtype=np.int64) - run_start
    # (2j + 1) / (2 quota) is correctly rounded, so equal fractions compare equal and the
    # stable sort then keeps the lower node id (slots are laid out in node order) first.
    position = (2 * j + 1) / (2 * quota[node]).astype(np.float64)
    return node[np.argsort(position, kind="stable")]
