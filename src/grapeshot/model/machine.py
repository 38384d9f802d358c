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

from grapeshot.model.errors import InputError, check_int, check_number

#: Network topologies grapeshot knows, with the parameters each one takes.
#: ``flat``: every node pair one hop apart at full bandwidth (a full-bisection cloud).
#: ``fat-tree``: nodes under leaf switches of ``arity`` ports, ``levels`` switch levels,
#: ``parents`` up-links per switch (default ``arity``, full bisection; fewer taper the tree).
#: ``torus3d``: routers on a 3D torus of ``dims``, ``nodes_per_router`` nodes each, link
#: ``link_weights`` per axis (x, y, z) as multiples of the slowest link's bandwidth.
#: A fat tree's ``arity`` when its file or preset gives none.
DEFAULT_ARITY = 2

#: Most nodes a machine may have: over six times the largest machine of the TOP500 lists
#: (Fugaku's 158,976 nodes), and small enough that every per-node array fits in memory.
MAX_NODES = 1 << 20
#: Most nodes or ranks a placement may have (:mod:`grapeshot.model.placement`): its node, rank
#: and core numbers are int32, as MPI ranks (C ints) are, and ``run`` places on ranks as nodes.
#: A placement on a machine's nodes has at most :data:`MAX_NODES`, checked against the machine.
MAX_RANKS = int(np.iinfo(np.int32).max)
#: Most cores a machine may have in all (nodes × cores per node); the same bound as the
#: largest tree of cores TreeMatch's text may describe (``topology.MAX_LEAVES`` is this).
MAX_CORES = 1 << 24
#: Most switch levels of a fat tree (a binary tree of ``MAX_NODES`` nodes has 20).
MAX_LEVELS = 64

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
        # Before anything is sized by the core count (the numbering check lists the cores).
        if self.cores > MAX_CORES:
            raise InputError(
                "node.levels", f"give {self.cores} cores per node", f"at most {MAX_CORES} cores"
            )
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
    if key in ("dims", "link_weights"):
        if not isinstance(value, list | tuple) or len(value) != 3:
            raise InputError(where, f"got {value!r}", "a list of 3 values (x, y, z)")
        # Each entry is checked alone; the message shows the whole vector, as the file has it.
        try:
            for v in value:
                if key == "dims":
                    check_int(v, where)
                else:
                    check_number(v, where, low=0.0, low_open=True, high_open=True)
        except InputError:
            wanted = "3 integers >= 1" if key == "dims" else "3 finite numbers > 0"
            raise InputError(where, f"got {value!r}", wanted) from None
        if key == "dims" and math.prod(value) > MAX_NODES:
            raise InputError(
                where, f"{list(value)} has {math.prod(value)} routers", f"at most {MAX_NODES}"
            )
        return tuple(value)
    minimum = 2 if key == "arity" else 1
    maximum = MAX_LEVELS if key == "levels" else MAX_NODES
    return check_int(value, where, minimum=minimum, maximum=maximum)


def _check_network_size(nodes: int, network: Network) -> None:
    """Refuse a network too small for ``nodes`` nodes: a torus of fewer routers than the nodes
    need, a fat tree whose given levels hold fewer nodes than the machine has.

    Without ``dims`` or ``levels`` the network is sized to the nodes (``topology.torus_box``,
    the fewest levels holding them), so only the values a file or preset gives are checked.
    """
    params = network.params
    if network.topology == "torus3d" and "dims" in params:
        dims = params["dims"]
        npr = params.get("nodes_per_router", 1)
        routers = -(-nodes // npr)
        if math.prod(dims) < routers:
            raise InputError(
                "network.torus3d.dims",
                f"{list(dims)} has {math.prod(dims)} routers, {math.prod(dims) * npr} nodes at "
                f"{npr} per router, for {nodes} nodes",
                f"dims with at least {routers} routers (x * y * z), or fewer nodes",
            )
    if network.topology == "fat-tree" and "levels" in params:
        arity, levels = params.get("arity", DEFAULT_ARITY), params["levels"]
        if arity**levels < nodes:
            raise InputError(
                "network.fat_tree.levels",
                f"{levels} levels of arity {arity} hold {arity**levels} nodes, for {nodes} nodes",
                f"arity ** levels >= {nodes}, or leave levels out (the fewest that hold them)",
            )


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
        # The one validation of a machine: presets, machine files, --nodes (with_nodes) and
        # every Machine a command builds pass here, so each rule holds wherever one is used.
        nodes = check_int(
            self.nodes,
            "nodes",
            maximum=MAX_NODES,
            expected=f"an integer in [1, {MAX_NODES}] (grapeshot's limit)",
        )
        object.__setattr__(self, "nodes", nodes)
        if not isinstance(self.node, NodeTree):
            raise InputError("node", f"got {type(self.node).__name__}", "a NodeTree")
        if not isinstance(self.network, Network):
            raise InputError("network", f"got {type(self.network).__name__}", "a Network")
        if self.node_cores is not None:
            cores = tuple(self.node_cores)
            if len(cores) != self.nodes:
                raise InputError(
                    "node_cores", f"has {len(cores)} entries", f"one per node ({self.nodes})"
                )
            if any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in cores):
                raise InputError("node_cores", f"got {list(cores)}", "integers >= 1")
            object.__setattr__(self, "node_cores", cores)
        cores_each = self.node_cores if self.node_cores is not None else (self.node.cores,)
        total = sum(cores_each) if self.node_cores is not None else self.nodes * cores_each[0]
        if total > MAX_CORES:
            raise InputError(
                "nodes",
                f"{self.nodes} nodes of {self.describe_cores()} cores are {total} cores",
                f"at most {MAX_CORES} cores in all (grapeshot's limit)",
            )
        _check_network_size(self.nodes, self.network)

    @property
    def cores_per_node(self) -> int:
        """Cores of one node of the hardware tree (the largest, if nodes differ)."""
        if self.node_cores is not None:
            return max(self.node_cores)
        return self.node.cores

    @property
    def uniform(self) -> bool:
        """Whether every node has the same number of cores."""
        return self.node_cores is None or len(set(self.node_cores)) == 1

    def describe_cores(self) -> str:
        """Cores per node as a person reads them: ``"32"``, or ``"16–64"`` when nodes differ.

        What a report prints where :attr:`cores_per_node` (the largest) would mislead.
        """
        if self.uniform:
            return str(self.cores_per_node)
        return f"{min(self.node_cores)}–{max(self.node_cores)}"  # type: ignore[arg-type]

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
        """The same machine with ``nodes`` nodes (per-node core lists cannot be resized).

        Raises
        ------
        InputError
            Naming ``--nodes`` when the machine cannot have that many nodes (the limit, or a
            network its description sizes: a torus's ``dims``, a fat tree's ``levels``).
        """
        if self.node_cores is not None and nodes != self.nodes:
            raise InputError(
                "--nodes", f"got {nodes}", f"{self.nodes}: this machine lists cores per node"
            )
        try:
            return dataclasses.replace(self, nodes=nodes)
        except InputError as exc:
            if exc.where == "nodes":  # the limit itself: the field is the option
                raise InputError("--nodes", exc.problem, exc.expected) from None
            raise InputError(
                "--nodes", f"got {nodes}; {self.name}'s {exc.where}: {exc.problem}", exc.expected
            ) from None
