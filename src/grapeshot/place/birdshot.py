"""Birdshot's random static placement, as the Canary runtime implements it.

Canary (quhang/canary, ``src/controller/placement_schedule.cc``) builds a list of slots in
which every worker appears once per partition it is owed, shuffles the list uniformly at
random, and puts partition ``i`` on the worker in slot ``i``. It is a random permutation of a
fixed multiset, not balls into bins: every node receives exactly its quota, only *which*
partitions it receives is random, which spreads the busy partitions of a sparse simulation
over the nodes (Birdshot §4, §5).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grapeshot.model.seed import SeedLike, as_generator
from grapeshot.place.quota import check_static_inputs


def place_birdshot(
    parts_shape: tuple[int, ...], cores: Sequence[int] | np.ndarray, *, seed: SeedLike
) -> np.ndarray:
    """Place partitions on nodes uniformly at random, each node getting exactly its quota.

    The slot list holds node ``k`` ``quota[k]`` times (``quota = quotas(P, cores)``, in node
    order) and is shuffled by one ``rng.permutation``; partition ``i`` goes to slot ``i``.
    Canary fills its slot list by dealing each worker ``cores[k]`` consecutive slots in turn
    until every partition has one; that is the same multiset when ``sum(cores)`` divides
    ``P`` and otherwise can be off by up to ``cores[k]``, which the quota rule avoids.

    Parameters
    ----------
    parts_shape
        Partitions per axis of the 2D or 3D grid; ``P = prod(parts_shape)``.
    cores
        Cores of each node, shape ``(n,)``, integers ``>= 1``.
    seed
        A non-negative integer (the same seed gives the same placement, bit for bit, so every
        rank can compute it locally) or a ``numpy.random.Generator`` to draw from.

    Returns
    -------
    numpy.ndarray
        int32, shape ``(P,)``: the node of each partition.

    Raises
    ------
    InputError
        On an invalid grid, core counts or seed.
    """
    _, quota = check_static_inputs(parts_shape, cores)
    rng = as_generator(seed)
    slots = np.repeat(np.arange(quota.size, dtype=np.int32), quota)
    return rng.permutation(slots)
