"""Machines: nodes, the hardware tree inside a node, and the network between nodes.

A :class:`Machine` is plain, immutable data. Placement strategies read its per-node core
counts; the simulator reads its network. Presets for the papers' machines live in
:mod:`grapeshot.model.presets`, the TOML file format in :mod:`grapeshot.model.machine_file`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from grapeshot.model.errors import InputError

#: Network topologies grapeshot knows, with the parameters each one takes.
#: ``flat``: every node pair one hop apart at full bandwidth (a full-bisection cloud).
#: ``fat-tree``: nodes under leaf switches of ``arity`` ports, ``levels`` switch levels,
#: ``parents`` up-links per switch (default ``arity``, full bisection; fewer taper the tree).
#: ``torus3d``: routers on a 3D torus of ``dims``, ``nodes_per_router`` nodes each, link
#: ``link_weights`` per axis (x, y, z) as multiples of the slowest link's bandwidth.
#: A fat tree's ``arity`` when its file or preset gives none.
DEFAULT_ARITY = 2

TOPOLOGIES: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "flat": frozenset(),
        "fat-tree": frozenset({"arity", "levels", "parents"}),
        "torus3d": frozenset({"dims", "nodes_per_router", "link_weights"}),
    }
)


@dataclass(frozen=True)
class NodeTree:
    """The hardware tree inside one node, hwloc-style.

    Parameters
    ----------
    levels
        ``((name, arity), ...)`` from the root down, e.g. ``(("socket", 2), ("core", 9))``:
        2 sockets of 9 cores. The product of the arities is the number of cores.
    core_numbering
        Physical (OS) index of each logical core in tree order, e.g. PlaFRIM's
        ``(0, 2, 4, 6, 1, 3, 5, 7)``; ``None`` means the identity.
    """

    levels: tuple[tuple[str, int], ...]
    core_numbering: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not self.levels:
            raise InputError("node.levels", "is empty", "at least one (name, arity) level")
        for i, level in enumerate(self.levels):
            if (
                not isinstance(level, tuple | list)
                or len(level) != 2
                or not isinstance(level[0], str)
                or not level[0]
                or isinstance(level[1], bool)
                or not isinstance(level[1], int)
                or level[1] < 1
            ):
                raise InputError(
                    f"node.levels[{i}]", f"got {level!r}", '["name", arity] with arity >= 1'
                )
        object.__setattr__(self, "levels", tuple((str(n), int(a)) for n, a in self.levels))
        if self.core_numbering is not None:
            numbering = tuple(self.core_numbering)
            if sorted(numbering) != list(range(self.cores)):
                raise InputError(
                    "node.core_numbering",
                    f"got {list(numbering)}",
                    f"a permutation of 0..{self.cores - 1}",
                )
            object.__setattr__(self, "core_numbering", numbering)

    @property
    def cores(self) -> int:
        """Cores per node: the product of the level arities."""
        return math.prod(arity for _, arity in self.levels)

    def physical_cores(self) -> np.ndarray:
        """Physical index of each logical core, shape ``(cores,)``."""
        if self.core_numbering is None:
            return np.arange(self.cores, dtype=np.int32)
        return np.asarray(self.core_numbering, dtype=np.int32)


@dataclass(frozen=True)
class Network:
    """The interconnect between nodes.

    Parameters
    ----------
    topology
        One of :data:`TOPOLOGIES`.
    latency
        One-way latency of a message between two nodes, seconds.
    bandwidth
        Bandwidth of a node's network interface, bytes per second.
    node_contention
        Whether a node receives one message at a time (CM-5 style); later messages to it
        wait.
    memcpy_bandwidth
        Bytes per second of a copy between two partitions on the same node.
    params
        Topology parameters (see :data:`TOPOLOGIES`).
    """

    topology: str = "flat"
    latency: float = 50e-6
    bandwidth: float = 1.25e9
    node_contention: bool = False
    memcpy_bandwidth: float = 5e9
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.topology not in TOPOLOGIES:
            raise InputError(
                "network.topology", f"got {self.topology!r}", f"one of {', '.join(TOPOLOGIES)}"
            )
        for name in ("latency", "bandwidth", "memcpy_bandwidth"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(f"network.{name}", f"got {value!r}", "a number")
            if not math.isfinite(value) or value < 0 or (name != "latency" and value == 0):
                raise InputError(f"network.{name}", f"got {value!r}", "a finite number > 0")
            object.__setattr__(self, name, float(value))
        if not isinstance(self.node_contention, bool):
            raise InputError("network.node_contention", f"got {self.node_contention!r}", "bool")
        allowed = TOPOLOGIES[self.topology]
        section = f"network.{self.topology.replace('-', '_')}"
        params = dict(self.params)
        for key, value in params.items():
            if key not in allowed:
                raise InputError(
                    f"{section}.{key}",
                    "unknown parameter",
                    f"one of {', '.join(sorted(allowed))}" if allowed else "no parameters",
                )
            params[key] = _check_param(f"{section}.{key}", key, value)
        arity = params.get("arity", DEFAULT_ARITY)
        if params.get("parents", 0) > arity:
            raise InputError(
                f"{section}.parents",
                f"got {params['parents']} for arity {arity}",
                "at most arity up-links per switch (arity: full bisection)",
            )
        object.__setattr__(self, "params", MappingProxyType(params))


def _check_param(where: str, key: str, value: Any) -> Any:
    """Validate one topology parameter; vectors come back as tuples."""

    def is_int(x: Any, lo: int) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and x >= lo

    if key in ("dims", "link_weights"):
        if not isinstance(value, list | tuple) or len(value) != 3:
            raise InputError(where, f"got {value!r}", "a list of 3 values (x, y, z)")
        if key == "dims" and not all(is_int(v, 1) for v in value):
            raise InputError(where, f"got {value!r}", "3 integers >= 1")
        if key == "link_weights" and not all(
            isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in value
        ):
            raise InputError(where, f"got {value!r}", "3 numbers > 0")
        return tuple(value)
    minimum = 2 if key == "arity" else 1
    if not is_int(value, minimum):
        raise InputError(where, f"got {value!r}", f"an integer >= {minimum}")
    return value


@dataclass(frozen=True)
class Machine:
    """A cluster: ``nodes`` nodes of the same hardware tree, joined by a network.

    Parameters
    ----------
    name
        Preset name or the ``name`` of a machine file.
    nodes
        Number of nodes.
    node
        The hardware tree of one node.
    network
        The interconnect.
    node_cores
        Optional cores per node when nodes differ (length ``nodes``); ``None`` means every
        node has ``node.cores`` cores.
    """

    name: str
    nodes: int
    node: NodeTree
    network: Network = field(default_factory=Network)
    node_cores: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.nodes, bool) or not isinstance(self.nodes, int | np.integer):
            raise InputError("nodes", f"got {self.nodes!r}", "an integer >= 1")
        if self.nodes < 1:
            raise InputError("nodes", f"got {self.nodes}", "an integer >= 1")
        object.__setattr__(self, "nodes", int(self.nodes))
        if self.node_cores is not None:
            cores = tuple(self.node_cores)
            if len(cores) != self.nodes:
                raise InputError(
                    "node_cores", f"has {len(cores)} entries", f"one per node ({self.nodes})"
                )
            if any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in cores):
                raise InputError("node_cores", f"got {list(cores)}", "integers >= 1")
            object.__setattr__(self, "node_cores", cores)

    @property
    def cores_per_node(self) -> int:
        """Cores of one node of the hardware tree (the largest, if nodes differ)."""
        if self.node_cores is not None:
            return max(self.node_cores)
        return self.node.cores

    def cores(self) -> np.ndarray:
        """Cores of every node, int64 array of shape ``(nodes,)``."""
        if self.node_cores is not None:
            return np.asarray(self.node_cores, dtype=np.int64)
        return np.full(self.nodes, self.node.cores, dtype=np.int64)

    @property
    def total_cores(self) -> int:
        """Cores summed over all nodes."""
        return int(self.cores().sum())

    def with_nodes(self, nodes: int) -> Machine:
        """The same machine with ``nodes`` nodes (per-node core lists cannot be resized)."""
        if self.node_cores is not None and nodes != self.nodes:
            raise InputError(
                "--nodes", f"got {nodes}", f"{self.nodes}: this machine lists cores per node"
            )
        return dataclasses.replace(self, nodes=nodes)
