"""Birdshot's random static placement, as the Canary runtime implements it.

Canary (quhang/canary, ``src/controller/placement_schedule.cc``) builds a list of slots in
which every worker appears once per partition it is owed, shuffles the list uniformly at
random, and puts partition ``i`` on the worker in slot ``i``. It is a random permutation of a
fixed multiset, not balls into bins: every node receives exactly its quota, only *which*
partitions it receives is random, which spreads the busy partitions of a sparse simulation
over the nodes (Birdshot §4, §5).

Two shuffles give the same distribution (uniform over the slot list's arrangements) but not
the same placement for a seed: ``"numpy"``, one ``rng.permutation`` of the slot list, what
grapeshot always used before, and ``"buckets"`` (:mod:`grapeshot.place.shuffle`),
cache-aware and about 4x faster at 10**8 partitions. The default, ``"auto"``, keeps
``"numpy"`` up to :data:`AUTO_NUMPY_MAX` partitions, so every placement of that size is what
it was, and takes ``"buckets"`` above (``docs/placement.md`` says which versions give which).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.model.seed import SeedLike, as_generator
from grapeshot.place.quota import check_static_inputs
from grapeshot.place.shuffle import shuffled_runs

#: The slot-list shuffles :func:`place_birdshot` offers; the first is the default.
SHUFFLES = ("auto", "numpy", "buckets")

#: Largest placement ``shuffle="auto"`` makes with ``"numpy"`` (2**22 partitions: a 16 MiB
#: slot list, within a last-level cache, where the permutation's random walk costs little).
AUTO_NUMPY_MAX = 1 << 22


def place_birdshot(
    parts_shape: tuple[int, ...],
    cores: Sequence[int] | np.ndarray,
    *,
    seed: SeedLike,
    shuffle: str = "auto",
) -> np.ndarray:
    """Place partitions on nodes uniformly at random, each node getting exactly its quota.

    The slot list holds node ``k`` ``quota[k]`` times (``quota = quotas(P, cores)``, in node
    order) and is shuffled uniformly at random; partition ``i`` goes to slot ``i``.
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
    shuffle
        ``"numpy"``: one ``rng.permutation`` of the slot list, grapeshot's placements before
        the bucket shuffle (same seed, same placement as then). ``"buckets"``: the two-level
        shuffle of :func:`grapeshot.place.shuffle.shuffled_runs`, about 4x faster at 10**8
        partitions. ``"auto"`` (default): ``"numpy"`` up to :data:`AUTO_NUMPY_MAX`
        partitions, ``"buckets"`` above. All are uniform over the arrangements of the slot
        list; for a given seed ``"numpy"`` and ``"buckets"`` give different placements.

    Returns
    -------
    numpy.ndarray
        int32, shape ``(P,)``: the node of each partition.

    Raises
    ------
    InputError
        On an invalid grid, core counts or seed, or an unknown ``shuffle``.
    """
    if shuffle not in SHUFFLES:
        raise InputError("shuffle", f"got {shuffle!r}", f"one of: {', '.join(SHUFFLES)}")
    _, quota = check_static_inputs(parts_shape, cores)
    rng = as_generator(seed)
    nodes = np.arange(quota.size, dtype=np.int32)
    n_parts = int(quota.sum())
    if shuffle == "numpy" or (shuffle == "auto" and n_parts <= AUTO_NUMPY_MAX):
        return rng.permutation(np.repeat(nodes, quota))
    return shuffled_runs(nodes, quota, rng)
