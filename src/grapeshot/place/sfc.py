"""Space-filling-curve placement: contiguous runs of the Hilbert curve, one per node.

Ordering the partitions along a Hilbert curve keeps partitions that are close on the curve
close in space, so cutting the curve into one run per node gives compact, mostly contiguous
regions at the cost of one sort, with no recursion (Zoltan's HSFC idea, on a structured grid).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grapeshot.model.seed import SeedLike, as_generator
from grapeshot.place.hilbert import hilbert_order
from grapeshot.place.quota import check_static_inputs


def place_sfc(
    parts_shape: tuple[int, ...], cores: Sequence[int] | np.ndarray, *, seed: SeedLike
) -> np.ndarray:
    """Cut the Hilbert curve through the partition grid into one run per node.

    Partitions are ordered by their Hilbert index on the enclosing power-of-two square or
    cube (:func:`grapeshot.place.hilbert.hilbert_order`); node 0 takes the first
    ``quota[0]`` of them, node 1 the next ``quota[1]``, and so on.

    Parameters
    ----------
    parts_shape
        Partitions per axis of the 2D or 3D grid; ``P = prod(parts_shape)``. Partition ids
        flatten the grid in C order.
    cores
        Cores of each node, shape ``(n,)``, integers ``>= 1``.
    seed
        Validated like every strategy's seed, then unused: the curve is deterministic.

    Returns
    -------
    numpy.ndarray
        int32, shape ``(P,)``: the node of each partition; node ``k`` holds exactly
        ``quotas(P, cores)[k]`` partitions, consecutive along the curve.

    Raises
    ------
    InputError
        On an invalid grid, core counts or seed.
    """
    shape, quota = check_static_inputs(parts_shape, cores)
    as_generator(seed)  # same contract as the random strategies; no randomness is drawn
    order = hilbert_order(shape)
    node_of = np.empty(order.size, dtype=np.int32)
    node_of[order] = np.repeat(np.arange(quota.size, dtype=np.int32), quota)
    return node_of
