"""Placement strategies: where each partition runs.

A strategy is a function of data (STYLE 3): the partition grid, the machine's cores per node
and a seed in, a :class:`~grapeshot.model.placement.Placement` out. Static strategies live in
:mod:`grapeshot.place.static`'s registry.
"""

from __future__ import annotations

from grapeshot.model.machine import Machine
from grapeshot.model.placement import Placement
from grapeshot.model.workload import Workload
from grapeshot.place.static import STATIC_STRATEGIES, get_static_strategy

__all__ = ["STATIC_STRATEGIES", "place", "place_grid"]


def place(workload: Workload, machine: Machine, strategy: str, *, seed: int) -> Placement:
    """Place ``workload``'s partitions on ``machine``'s nodes with ``strategy``.

    Parameters
    ----------
    workload
        The partitioned domain (only its partition grid is read by static strategies).
    machine
        Nodes and their cores; every node gets a partition count proportional to its cores.
    strategy
        A name from :data:`STATIC_STRATEGIES`, optionally with options
        (``"birdshot:shuffle=numpy"``).
    seed
        Seed of the strategy's random choices; the same seed gives the same placement,
        bit for bit. Recorded in the placement even by deterministic strategies.
    """
    return place_grid(workload.parts_shape, machine, strategy, seed=seed)


def place_grid(
    parts_shape: tuple[int, ...], machine: Machine, strategy: str, *, seed: int
) -> Placement:
    """Place a grid of partitions of shape ``parts_shape`` (2 or 3 positive sizes, partitions
    numbered in C order) on ``machine``'s nodes: :func:`place` without a workload, for sizes
    whose workload would not fit in memory (``grapeshot place --grid``)."""
    fn = get_static_strategy(strategy)
    node_of = fn(tuple(parts_shape), machine.cores(), seed=seed)
    return Placement(node_of=node_of, nodes=machine.nodes, strategy=strategy, seed=seed)
