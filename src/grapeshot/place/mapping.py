"""Mapping strategies: tasks that communicate onto the cores of a tree (and nodes of a network).

One registry (STYLE 5): :data:`MAPPING_STRATEGIES` maps a name to
``fn(affinity, tree, *, oversub, seed) -> core_of`` (physical leaf id of every task). Every
strategy gives every core ``floor(n / cores)`` or ``ceil(n / cores)`` tasks (at most one when
the tasks fit), so they are compared at equal balance:

``treematch``
    :func:`grapeshot.place.treematch.treematch`.
``packed``
    Task ``i`` on the ``i``-th slot in tree order (the reference's *Packed* baseline).
``round-robin``
    Task ``i`` on physical core ``i mod cores`` (the reference's *RR*; on PlaFRIM physical
    numbering this spreads neighbours over sockets).
``metis``, ``kahip``
    Recursive partitioning along the tree: the tasks split into the root's children, each
    part into its children, and so on (pymetis k-way / KaHIP kaffpa), sizes fixed exactly.
``scotch``
    Scotch's graph mapping onto its ``tleaf`` architecture of the tree, sizes fixed.

:func:`place_by_mapping` runs a strategy on a workload (loads + halo graph) and a machine: the
whole machine as one tree (nodes above the node tree), then the node groups laid on the
network by :func:`map_to_network` (LibTopoMap's greedy, §3.3, on hop distances).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp
from numba import njit

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine
from grapeshot.model.placement import Placement
from grapeshot.model.seed import SeedLike, as_generator
from grapeshot.model.topology import TreeTopology, machine_topology, network_graph
from grapeshot.model.workload import Workload
from grapeshot.place.partitioners import balanced_targets, fix_sizes, partition, scotch_tleaf_map
from grapeshot.place.treematch import _check_oversub, mapping_cost, symmetric_affinity, treematch

MappingFn = Callable[..., np.ndarray]

#: Least relative hop-bytes saving for which :func:`map_to_network` moves the groups.
MIN_NETWORK_GAIN = 0.02


def _slots_targets(n: int, tree: TreeTopology) -> np.ndarray:
    """Tasks per leaf position: balanced counts, the larger ones first in tree order."""
    return balanced_targets(n, tree.leaves)


def map_treematch(w, tree: TreeTopology, *, oversub: int | None = None, seed: SeedLike = 0):
    """TreeMatch (deterministic: ``seed`` is accepted and ignored)."""
    as_generator(seed)
    return treematch(w, tree, oversub=oversub).core_of


def map_packed(w, tree: TreeTopology, *, oversub: int | None = None, seed: SeedLike = 0):
    """Task ``i`` on the ``i``-th slot in tree order, counts balanced."""
    as_generator(seed)
    n = w.shape[0]
    _check_oversub(oversub, n, tree.leaves)
    position = np.repeat(np.arange(tree.leaves), _slots_targets(n, tree))
    return tree.physical()[position]


def map_round_robin(w, tree: TreeTopology, *, oversub: int | None = None, seed: SeedLike = 0):
    """Task ``i`` on physical core ``i mod cores``."""
    as_generator(seed)
    n = w.shape[0]
    _check_oversub(oversub, n, tree.leaves)
    return np.arange(n, dtype=np.int64) % tree.leaves


def _recursive(method: str):
    def fn(w, tree: TreeTopology, *, oversub: int | None = None, seed: SeedLike = 0):
        rng = as_generator(seed)
        s = symmetric_affinity(w)
        n = s.shape[0]
        _check_oversub(oversub, n, tree.leaves)
        spans = tree.spans()
        targets = _slots_targets(n, tree)
        position = np.zeros(n, dtype=np.int64)
        # Top-down: (tasks, first leaf) pairs to split into the children of their subtree.
        stack = [(np.arange(n, dtype=np.int64), 0, 0)]
        while stack:
            tasks, first, depth = stack.pop()
            if depth == tree.depth or len(tasks) == 0:
                position[tasks] = first
                continue
            k = tree.arities[depth]
            span = spans[depth + 1]
            child_targets = targets[first : first + k * span].reshape(k, span).sum(axis=1)
            sub = s[tasks][:, tasks].tocsr()
            part = partition(
                sub,
                k,
                method=method,
                targets=child_targets,
                seed=int(rng.integers(0, 2**31 - 1)),
            )
            for c in range(k):
                stack.append((tasks[part == c], first + c * span, depth + 1))
        return tree.physical()[position]

    fn.__name__ = f"map_{method}"
    fn.__doc__ = f"Recursive {method} partitioning along the tree, sizes exact."
    return fn


def map_scotch(w, tree: TreeTopology, *, oversub: int | None = None, seed: SeedLike = 0):
    """Scotch's mapping onto its tleaf architecture, counts fixed to balanced."""
    rng = as_generator(seed)
    s = symmetric_affinity(w)
    n = s.shape[0]
    _check_oversub(oversub, n, tree.leaves)
    if n == 1:
        return tree.physical()[:1].copy()
    position = scotch_tleaf_map(s, tree, seed=int(rng.integers(0, 2**31 - 1)))
    position = fix_sizes(position, _slots_targets(n, tree), s)
    return tree.physical()[position]


#: Name → mapping strategy ``fn(affinity, tree, *, oversub, seed) -> core_of``.
MAPPING_STRATEGIES: Mapping[str, MappingFn] = MappingProxyType(
    {
        "treematch": map_treematch,
        "packed": map_packed,
        "round-robin": map_round_robin,
        "metis": _recursive("metis"),
        "kahip": _recursive("kahip"),
        "scotch": map_scotch,
    }
)

#: Strategies that use the seed (the partitioners' own randomness).
RANDOMISED_MAPPINGS = frozenset({"metis", "kahip", "scotch"})


def get_mapping_strategy(name: str) -> MappingFn:
    """The mapping strategy ``name``; an unknown name lists the valid ones."""
    try:
        return MAPPING_STRATEGIES[name]
    except (KeyError, TypeError):
        raise InputError(
            "--strategy",
            f"unknown mapping strategy {name!r}",
            f"one of: {', '.join(MAPPING_STRATEGIES)}",
        ) from None


def map_tasks(
    matrix,
    tree: TreeTopology,
    strategy: str = "treematch",
    *,
    oversub: int | None = None,
    seed: SeedLike = 0,
) -> dict:
    """Map ``matrix``'s tasks onto ``tree`` with ``strategy``: the Python side of ``grapeshot map``.

    Returns
    -------
    dict
        ``core_of`` (list of physical leaf ids), ``seconds`` (mapping time only), ``cost``
        (:func:`~grapeshot.place.treematch.mapping_cost`), ``strategy``, ``oversub``.
    """
    fn = get_mapping_strategy(strategy)
    w = symmetric_affinity(matrix)
    n = w.shape[0]
    if n == 0:
        raise InputError("matrix", "has no tasks", "at least one row")
    r = _check_oversub(oversub, n, tree.leaves)
    started = time.perf_counter()
    core_of = np.asarray(fn(w, tree, oversub=oversub, seed=seed), dtype=np.int64)
    seconds = time.perf_counter() - started
    return {
        "core_of": core_of.tolist(),
        "seconds": seconds,
        "cost": mapping_cost(w, tree, core_of),
        "strategy": strategy,
        "oversub": r,
    }


# --- the network level ---------------------------------------------------------------------------


@njit(cache=True)
def _greedy_network(indptr, indices, data, dist, start):
    """LibTopoMap's greedy (§3.3), distances from the host of the discovering group.

    Groups are taken heaviest first; each next group is the unplaced one most connected to
    placed groups, put on the free node minimising Σ bytes × distance to its placed peers.
    """
    k = dist.shape[0]
    host = np.full(k, -1, dtype=np.int64)
    free = np.ones(k, dtype=np.bool_)
    pull = np.zeros(k)
    total = np.zeros(k)
    for g in range(k):
        for e in range(indptr[g], indptr[g + 1]):
            total[g] += data[e]
    for step in range(k):
        g = -1
        gw = -1.0
        for c in range(k):
            if host[c] < 0:
                key = pull[c] * 1e6 + total[c] if step > 0 else total[c]
                if key > gw:
                    gw = key
                    g = c
        best = start
        if step > 0:
            cost = np.zeros(k)
            for e in range(indptr[g], indptr[g + 1]):
                p = host[indices[e]]
                if p >= 0:
                    row = dist[p]
                    w = data[e]
                    for h in range(k):
                        cost[h] += w * row[h]
            best_cost = np.inf
            for h in range(k):
                if free[h] and cost[h] < best_cost:
                    best_cost = cost[h]
                    best = h
        host[g] = best
        free[best] = False
        for e in range(indptr[g], indptr[g + 1]):
            pull[indices[e]] += data[e]
    return host


def network_hop_bytes(group_comm: sp.csr_array, host: np.ndarray, dist: np.ndarray) -> float:
    """Σ bytes × distance of the groups' traffic with group ``g`` on node ``host[g]``."""
    coo = group_comm.tocoo()
    return float((coo.data * dist[host[coo.row], host[coo.col]]).sum())


def map_to_network(group_comm: sp.csr_array, machine: Machine, *, starts: int = 2) -> np.ndarray:
    """Lay ``k = machine.nodes`` groups on the nodes of the network (LibTopoMap style).

    Greedy from ``starts`` start nodes spread over the machine; the best by hop-bytes is kept,
    and the identity (group ``g`` on node ``g``) unless the best saves at least
    :data:`MIN_NETWORK_GAIN` of its hop-bytes (LibTopoMap's step 7, with a margin).

    Returns
    -------
    numpy.ndarray
        int64 ``(k,)``: node of each group.
    """
    k = machine.nodes
    s = symmetric_affinity(group_comm)
    if s.shape[0] != k:
        raise InputError("group_comm", f"has {s.shape[0]} groups", f"{k} (one per node)")
    dist = network_graph(machine).distance_matrix().astype(np.float64)
    best = np.arange(k, dtype=np.int64)
    best_cost = network_hop_bytes(s, best, dist)
    if s.nnz == 0 or np.all(dist[~np.eye(k, dtype=bool)] == dist.max()):
        return best  # every placement is equivalent (flat network)
    keep_cost = best_cost
    # One start on large machines: each greedy pass is O(k^2 * degree).
    n_starts = min(starts, k) if k <= 256 else 1
    for start in np.unique(np.linspace(0, k - 1, num=n_starts).astype(np.int64)):
        host = _greedy_network(
            s.indptr.astype(np.int64), s.indices.astype(np.int64), s.data, dist, int(start)
        )
        cost = network_hop_bytes(s, host, dist)
        if cost < best_cost:
            best, best_cost = host, cost
    # Moving every group for a marginal gain costs more than it saves: keep the current
    # layout unless the new one saves at least MIN_NETWORK_GAIN of the hop-bytes.
    if best_cost > (1.0 - MIN_NETWORK_GAIN) * keep_cost:
        return np.arange(k, dtype=np.int64)
    return best


def workload_comm(workload: Workload) -> sp.csr_array:
    """The workload's halo graph as a ``(P, P)`` sparse matrix of bytes per step."""
    halo = workload.halo
    n = workload.n_parts
    return sp.csr_array((halo.nbytes.astype(np.float64), halo.indices, halo.indptr), shape=(n, n))


def place_by_mapping(
    workload: Workload, machine: Machine, strategy: str, *, seed: SeedLike = 0
) -> Placement:
    """Place a workload's partitions on a machine's cores with a mapping strategy.

    The whole machine is one tree (:func:`~grapeshot.model.topology.machine_topology`); the
    strategy maps the halo graph onto it; the groups of each node are then laid on the network
    (:func:`map_to_network`). Every core gets ``floor`` or ``ceil(P / cores)`` partitions.
    """
    fn = get_mapping_strategy(strategy)
    comm = workload_comm(workload)
    tree = machine_topology(machine)
    cores = machine.cores_per_node
    leaf = np.asarray(fn(comm, tree, seed=seed), dtype=np.int64)
    node_of = leaf // cores
    core_of = leaf % cores
    if machine.nodes > 1:
        group = sp.csr_array(
            (np.ones(len(node_of)), (np.arange(len(node_of)), node_of)),
            shape=(len(node_of), machine.nodes),
        )
        s = symmetric_affinity(comm)
        host = map_to_network((group.T @ s @ group).tocsr(), machine)
        node_of = host[node_of]
    return Placement(
        node_of=node_of,
        nodes=machine.nodes,
        strategy=strategy,
        seed=seed if isinstance(seed, int) else None,
        core_of=core_of,
    )


def network_metrics(workload: Workload, node_of: np.ndarray, machine: Machine) -> dict:
    """Bytes per step between nodes and network hop-bytes (bytes × hops) of a placement.

    Returns
    -------
    dict
        ``bytes_cut``: halo bytes per step between different nodes; ``hop_bytes``: Σ bytes ×
        :meth:`~grapeshot.model.topology.NetworkGraph.distance` over the halo messages.
    """
    halo = workload.halo
    src = halo.sources()
    node_of = np.asarray(node_of, dtype=np.int64)
    a, b = node_of[src], node_of[halo.indices]
    nbytes = halo.nbytes.astype(np.float64)
    dist = network_graph(machine).distance(a, b)
    return {
        "bytes_cut": float(nbytes[a != b].sum()),
        "hop_bytes": float((nbytes * dist).sum()),
    }
