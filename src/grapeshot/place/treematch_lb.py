"""TreeMatchLB: topology-aware, hierarchical load balancing (our reconstruction, spec §4.3).

The paper (TreeMatchLB, §4.2–4.4) balances chares in two levels: the network level (groups of
chares to nodes, LibTopoMap on the allocated nodes' network) and the node level (each node's
chares to its cores with TreeMatch, oversubscribed, then a load refinement), the node level
running independently on every node. The published text leaves details open; this is the
reconstruction of ``placement-algorithms.md`` §4.3, labelled as such in ``docs/mapping.md``:

1. **Groups.** The chares are split into one group per node of balanced size by affinity:
   ``partitioner="treematch"`` (TreeMatch's bottom-up grouping onto a one-level tree of the
   nodes, fast and multilevel), ``"metis"`` (pymetis k-way, load-weighted), or ``"keep"``
   (the current node of each chare: the paper's literal reading, which only moves groups).
   Groups are relabelled to the node they overlap most, so unchanged groups do not move; the
   current nodes are kept when they already cut fewer bytes (a stencil placed geometrically).
2. **Smoothing** (§4.3.2): while two nodes' loads per core differ by more than ``alpha``
   (5 %) of the balanced load per core (``Σ load / Σ cores``), the busiest node swaps a heavy
   chare for a light chare of the idlest node (the swap closest to halving their gap), or gives
   one chare when that is better.
3. **Network** (§4.3.1, LibTopoMap): the groups' communication matrix is laid on the nodes'
   network by LibTopoMap's greedy on hop distances (torus with Gemini's 2 nodes per router,
   fat tree, flat), keeping the current layout unless it lowers hop-bytes.
4. **Node level** (§4.4, algorithm 2): on every node TreeMatch maps its chares onto its
   core tree with ``r = ceil(chares / cores)`` slots per core and balanced counts
   (:func:`~grapeshot.place.treematch.treematch_nodes`: all nodes in one pass; with an MPI
   communicator, the paper's master-worker scheme: rank 0 computes steps 1-3, the nodes are
   dealt to the ranks for this step and step 5, and the cores gathered).
5. **Refinement** (§4.4.2): on every node, while the busiest core exceeds ``(1 + eps)`` × the
   node's mean, it gives the chare that costs least in lost affinity to the least loaded core,
   searched first under the same socket then climbing the tree; a move must keep the receiver
   within the limit or at least lower the busier of the two cores.

:class:`TreeMatchLB` is the dynamic strategy (``DynamicStrategy`` protocol) the simulator
calls; :func:`treematch_lb` the function with all results (cores too).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from numba import njit

from grapeshot.model.errors import InputError, check_int, check_number
from grapeshot.model.machine import Machine
from grapeshot.model.placement import balanced_load, load_imbalance
from grapeshot.model.topology import TreeTopology, node_topology
from grapeshot.place.mapping import map_to_network
from grapeshot.place.partitioners import partition
from grapeshot.place.treematch import (
    aggregate,
    csr_arrays,
    group_balanced,
    group_order,
    symmetric_affinity,
    treematch_nodes,
)

PARTITIONERS = ("treematch", "metis", "keep")


@dataclass(frozen=True, eq=False)
class TreeMatchLBResult:
    """What TreeMatchLB decided.

    Attributes
    ----------
    node_of, core_of
        int64 ``(P,)``: node of each chare and its physical core within the node.
    seconds
        Wall time per level: ``groups``, ``smoothing``, ``network``, ``nodes``, ``refine``
        (on rank 0 with a communicator, plus ``gather``: waiting for the other ranks and
        exchanging their cores).
    stats
        ``swaps``, ``moves`` (smoothing), ``refine_moves``, ``node_imbalance`` (the LIF of
        the node loads, :func:`~grapeshot.model.placement.load_imbalance`), ``migrated``
        (chares whose node changed).
    """

    node_of: np.ndarray
    core_of: np.ndarray
    seconds: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)


# --- level 1: groups and smoothing ----------------------------------------------------------


@njit(cache=True)
def _cut(indptr, indices, data, group):
    total = 0.0
    for t in range(indptr.shape[0] - 1):
        g = group[t]
        for e in range(indptr[t], indptr[t + 1]):
            if group[indices[e]] != g:
                total += data[e]
    return total


def cut_bytes(w: sp.csr_array, group: np.ndarray) -> float:
    """Affinity between chares of different groups (each pair counted both ways)."""
    return float(
        _cut(
            *csr_arrays(w),
            np.ascontiguousarray(group, dtype=np.int64),
        )
    )


def relabel_by_overlap(group: np.ndarray, current: np.ndarray, nodes: int) -> np.ndarray:
    """Rename groups so that each takes the node it shares most chares with (greedy)."""
    pair = group.astype(np.int64) * nodes + current.astype(np.int64)
    if nodes * nodes <= 1 << 24:
        counts = np.bincount(pair, minlength=nodes * nodes)
        keys = np.flatnonzero(counts)
        counts = counts[keys]
    else:
        keys, counts = np.unique(pair, return_counts=True)
    g_of, n_of = keys // nodes, keys % nodes
    order = np.lexsort((n_of, g_of, -counts)).astype(np.int64)
    name = _assign_names(g_of, n_of, order, nodes)
    return name[group]


@njit(cache=True)
def _assign_names(g_of, n_of, order, nodes):
    """Greedy: by decreasing overlap, group g takes node v if both are still free."""
    name = np.full(nodes, -1, dtype=np.int64)
    taken = np.zeros(nodes, dtype=np.bool_)
    for i in order:
        g = g_of[i]
        v = n_of[i]
        if name[g] < 0 and not taken[v]:
            name[g] = v
            taken[v] = True
    k = 0
    for g in range(nodes):
        if name[g] < 0:
            while taken[k]:
                k += 1
            name[g] = k
            taken[k] = True
    return name


@njit(cache=True)
def _smooth(load, node_of, cores, level, alpha, max_steps):
    """Swaps (or single moves) from the busiest to the idlest node until within ``alpha``.

    ``level`` is the balanced load per core (``balanced_load``): swaps and moves keep the
    total load and the cores, so it holds throughout.
    """
    n_nodes = cores.shape[0]
    node_load = np.zeros(n_nodes)
    for p in range(load.shape[0]):
        node_load[node_of[p]] += load[p]
    swaps = 0
    moves = 0
    for _ in range(max_steps):
        per = node_load / cores
        hi = int(np.argmax(per))
        lo = int(np.argmin(per))
        if level <= 0.0 or per[hi] - per[lo] <= alpha * level:
            break
        # Ideal load to shift from hi to lo (in seconds, equalising per-core loads).
        want = (node_load[hi] * cores[lo] - node_load[lo] * cores[hi]) / (cores[hi] + cores[lo])
        light = -1
        for p in range(load.shape[0]):
            if node_of[p] == lo and (light < 0 or load[p] < load[light]):
                light = p
        base = load[light] if light >= 0 else 0.0
        best_swap = -1
        best_move = -1
        gap_swap = np.inf
        gap_move = np.inf
        for p in range(load.shape[0]):
            if node_of[p] != hi:
                continue
            if light >= 0 and load[p] > base and abs(load[p] - base - want) < gap_swap:
                gap_swap = abs(load[p] - base - want)
                best_swap = p
            if load[p] > 0 and abs(load[p] - want) < gap_move:
                gap_move = abs(load[p] - want)
                best_move = p
        before = per[hi]
        # A swap keeps the chare counts (the paper's step); a single move only when no swap
        # lowers the busier of the two.
        done = False
        if best_swap >= 0:
            delta = load[best_swap] - base
            after = max((node_load[hi] - delta) / cores[hi], (node_load[lo] + delta) / cores[lo])
            if after < before - 1e-15:
                node_of[best_swap] = lo
                node_of[light] = hi
                node_load[hi] -= delta
                node_load[lo] += delta
                swaps += 1
                done = True
        if not done and best_move >= 0:
            delta = load[best_move]
            after = max((node_load[hi] - delta) / cores[hi], (node_load[lo] + delta) / cores[lo])
            if after < before - 1e-15:
                node_of[best_move] = lo
                node_load[hi] -= delta
                node_load[lo] += delta
                moves += 1
                done = True
        if not done:
            break
    return swaps, moves


def smooth_loads(
    load: np.ndarray, node_of: np.ndarray, cores: np.ndarray, alpha: float = 0.05
) -> tuple[np.ndarray, int, int]:
    """Smooth node loads below ``alpha`` by swapping chares (spec §4.3.2).

    Returns
    -------
    (node_of, swaps, moves)
        The new node of every chare (a copy) and the swaps and single moves made.
    """
    new = np.ascontiguousarray(node_of, dtype=np.int64).copy()
    load = np.ascontiguousarray(load, dtype=np.float64)
    cores = np.asarray(cores, dtype=np.float64)
    # The pair test is against the balanced load per core, the LIF's denominator (an
    # unweighted mean of per-core loads misjudges unequal nodes).
    level = float(balanced_load(np.bincount(new, weights=load, minlength=cores.size), cores))
    swaps, moves = _smooth(load, new, cores, level, float(alpha), 4 * len(new) + 16)
    return new, int(swaps), int(moves)


@njit(cache=True)
def _dense_group_sums(indptr, indices, data, group, n_groups):
    """``D[g, h] = Σ w[a, b]`` over ``a`` in ``g``, ``b`` in ``h != g``: one sequential pass."""
    out = np.zeros((n_groups, n_groups))
    for a in range(indptr.shape[0] - 1):
        g = group[a]
        for e in range(indptr[a], indptr[a + 1]):
            h = group[indices[e]]
            if h != g:
                out[g, h] += data[e]
    return out


#: Groups up to which :func:`group_affinity` sums into a dense matrix (8 MB at 1,024).
DENSE_GROUPS = 4096


def group_affinity(w: sp.csr_array, group: np.ndarray, n_groups: int) -> sp.csr_array:
    """Affinity between groups, zero diagonal: :func:`~grapeshot.place.treematch.aggregate`.

    For a few groups (the nodes) the sums go into a dense matrix in one pass over the chares
    in index order, which reads the big matrix sequentially instead of group by group; each
    entry is summed in the same order as ``aggregate`` does, so the values are identical
    (the columns come out sorted).
    """
    if n_groups > DENSE_GROUPS:
        return aggregate(w, group, n_groups)
    dense = _dense_group_sums(
        *csr_arrays(w),
        np.ascontiguousarray(group, dtype=np.int64),
        int(n_groups),
    )
    return sp.csr_array(dense)


# --- level 3: refinement inside nodes -------------------------------------------------------------


@njit(cache=True)
def _refine(load, node_of, core_of, order, ptr, cores, spans, indptr, indices, data, eps):
    """Per node: move chares off the busiest core while it exceeds (1 + eps) × the mean.

    ``order[ptr[v]:ptr[v+1]]`` lists node ``v``'s chares; ``core_of`` holds leaf *positions*.
    """
    moved = 0
    n_nodes = ptr.shape[0] - 1
    core_load = np.zeros(cores)
    for v in range(n_nodes):
        core_load[:] = 0.0
        for i in range(ptr[v], ptr[v + 1]):
            p = order[i]
            core_load[core_of[p]] += load[p]
        mean = core_load.mean()
        if mean <= 0.0:
            continue
        limit = (1.0 + eps) * mean
        for _ in range(ptr[v + 1] - ptr[v]):
            donor = int(np.argmax(core_load))
            if core_load[donor] <= limit:
                break
            best = -1
            best_to = -1
            best_score = np.inf
            # Receivers: the least loaded core under the lowest common level first.
            for depth in range(spans.shape[0] - 1, -1, -1):
                span = spans[depth]
                first = (donor // span) * span
                recv = -1
                for c in range(first, first + span):
                    if c != donor and (recv < 0 or core_load[c] < core_load[recv]):
                        recv = c
                if recv < 0:
                    continue
                for i in range(ptr[v], ptr[v + 1]):
                    p = order[i]
                    if core_of[p] != donor or load[p] <= 0.0:
                        continue
                    # Within the limit, or at least lowering the busier of the two cores.
                    after = core_load[recv] + load[p]
                    if after > limit and after >= core_load[donor] - 1e-12 * limit:
                        continue
                    to_donor = 0.0
                    to_recv = 0.0
                    for e in range(indptr[p], indptr[p + 1]):
                        q = indices[e]
                        if node_of[q] == v and q != p:
                            if core_of[q] == donor:
                                to_donor += data[e]
                            elif core_of[q] == recv:
                                to_recv += data[e]
                    score = to_donor - to_recv
                    if score < best_score:
                        best_score = score
                        best = p
                        best_to = recv
                if best >= 0:
                    break
            if best < 0:
                break
            core_load[donor] -= load[best]
            core_load[best_to] += load[best]
            core_of[best] = best_to
            moved += 1
    return moved


# --- the balancer ---------------------------------------------------------------------------------


@njit(cache=True)
def _node_submatrix(indptr, indices, data, chares, local, node_of):
    """CSR over ``chares`` (renumbered by ``local``) of the entries inside one node."""
    ptr = np.zeros(chares.shape[0] + 1, dtype=np.int64)
    count = 0
    for i in range(chares.shape[0]):
        t = chares[i]
        for e in range(indptr[t], indptr[t + 1]):
            j = indices[e]
            if local[j] >= 0 and node_of[j] == node_of[t]:
                count += 1
        ptr[i + 1] = count
    out_idx = np.empty(count, dtype=np.int64)
    out_val = np.empty(count)
    k = 0
    for i in range(chares.shape[0]):
        t = chares[i]
        for e in range(indptr[t], indptr[t + 1]):
            j = indices[e]
            if local[j] >= 0 and node_of[j] == node_of[t]:
                out_idx[k] = local[j]
                out_val[k] = data[e]
                k += 1
    return ptr, out_idx, out_val


def _patient_bcast(mpi_comm, buf: np.ndarray, poll: float = 1e-3) -> None:
    """Broadcast ``buf`` from rank 0, the waiting ranks sleeping between polls.

    MPICH's blocking calls spin on a core; on a shared machine that core is better left to
    the rank doing the work.
    """
    req = mpi_comm.Ibcast(buf, root=0)
    while not req.Test():
        time.sleep(poll)


def _split_nodes(nodes: int, size: int, rank: int) -> np.ndarray:
    """Nodes a rank handles: a round-robin deal (balanced count, mixed positions)."""
    return np.arange(rank, nodes, size, dtype=np.int64)


def _nodes_and_refine(
    w: sp.csr_array,
    node_of: np.ndarray,
    nodes: int,
    tree: TreeTopology,
    load: np.ndarray,
    eps: float,
    seconds: dict,
) -> tuple[np.ndarray, int]:
    """Per-node TreeMatch then refinement of the given nodes; leaf positions and moves."""
    t = time.perf_counter()
    position = tree.position()[treematch_nodes(w, node_of, nodes, tree)]
    seconds["nodes"] = time.perf_counter() - t
    t = time.perf_counter()
    order, ptr = group_order(node_of, nodes)
    moves = _refine(
        load,
        node_of,
        position,
        order,
        ptr,
        tree.leaves,
        tree.spans()[:-1],
        *csr_arrays(w),
        float(eps),
    )
    seconds["refine"] = time.perf_counter() - t
    return position, int(moves)


def node_level(
    w: sp.csr_array,
    node_of: np.ndarray,
    machine: Machine,
    tree: TreeTopology,
    mpi_comm=None,
    *,
    load: np.ndarray | None = None,
    eps: float = 0.05,
    seconds: dict | None = None,
) -> tuple[np.ndarray, int]:
    """Per-node TreeMatch (algorithm 2) and refinement, nodes dealt over ``mpi_comm``'s ranks.

    Both steps only look inside a node, so each rank runs them on its nodes' submatrix and
    the results are gathered: the same as one process doing every node.

    Returns
    -------
    (position, moves)
        The leaf *position* of every chare within its node's tree, and the refinement's
        moves.
    """
    n = w.shape[0]
    nodes = machine.nodes
    load = np.ones(n) if load is None else np.ascontiguousarray(load, dtype=np.float64)
    seconds = {} if seconds is None else seconds
    node_of = np.ascontiguousarray(node_of, dtype=np.int64)
    if mpi_comm is None or mpi_comm.Get_size() == 1:
        return _nodes_and_refine(w, node_of, nodes, tree, load, eps, seconds)
    size, rank = mpi_comm.Get_size(), mpi_comm.Get_rank()
    t = time.perf_counter()
    node_owner = np.empty(nodes, dtype=np.int64)
    for r in range(size):
        node_owner[_split_nodes(nodes, size, r)] = r
    owner = node_owner[node_of]
    mine = node_owner == rank
    chares = np.flatnonzero(owner == rank)
    local_node = (np.cumsum(mine) - 1)[node_of[chares]]
    local = np.full(n, -1, dtype=np.int64)
    local[chares] = np.arange(len(chares))
    ptr, idx, val = _node_submatrix(
        *csr_arrays(w),
        chares,
        local,
        node_of,
    )
    sub = sp.csr_array((val, idx, ptr), shape=(len(chares), len(chares)))
    # A principal submatrix of the affinity (symmetric, zero diagonal, no zeros): mark it
    # so TreeMatch does not symmetrise it again (a transpose and a sort of the whole thing).
    sub._grapeshot_affinity = True
    split = time.perf_counter() - t
    pos, moves = _nodes_and_refine(
        sub, local_node, int(mine.sum()), tree, load[chares], eps, seconds
    )
    seconds["nodes"] += split
    t = time.perf_counter()
    # Every rank knows which chares every other rank placed (the deal is a function of
    # node_of), so only the positions travel: one small int per chare, in rank order.
    counts = np.bincount(owner, minlength=size)
    dtype = np.int8 if tree.leaves <= 127 else np.int32
    recv = np.empty(n, dtype=dtype)
    mpi_comm.Allgatherv(
        np.ascontiguousarray(pos, dtype=dtype),
        [recv, (counts.tolist(), (np.cumsum(counts) - counts).tolist())],
    )
    by_rank, _ = group_order(owner, size)  # chares of rank 0, then of rank 1, ... in id order
    out = np.empty(n, dtype=np.int64)
    out[by_rank] = recv
    total_moves = mpi_comm.allreduce(moves)
    seconds["gather"] = time.perf_counter() - t
    return out, int(total_moves)


def treematch_lb(
    loads: np.ndarray,
    comm,
    node_of: np.ndarray,
    machine: Machine,
    *,
    alpha: float = 0.05,
    eps: float = 0.05,
    partitioner: str = "treematch",
    seed: int = 0,
    mpi_comm=None,
    symmetric: bool = False,
) -> TreeMatchLBResult:
    """Run TreeMatchLB once (see the module docstring).

    Parameters
    ----------
    loads
        float ``(P,)``: load of each chare (seconds per step).
    comm
        ``(P, P)`` bytes between chares per step (its symmetric part is used).
    node_of
        int ``(P,)``: current node of each chare.
    machine
        Nodes (identical node trees) and the network.
    alpha
        Node load smoothing threshold (fraction of the balanced load per core,
        ``Σ load / Σ cores``).
    eps
        Core load tolerance of the refinement.
    partitioner
        ``"treematch"``, ``"metis"`` or ``"keep"`` (see the module docstring).
    seed
        Seed of METIS (the other steps are deterministic).
    mpi_comm
        An mpi4py communicator: the node level is spread over its ranks (every rank must call
        with the same arguments and gets the same result).
    symmetric
        ``comm`` is a symmetric sparse matrix already (the simulator's halo matrix): skip
        symmetrising it.
    """
    seconds: dict[str, float] = {}
    load = np.asarray(loads, dtype=np.float64)
    n = load.shape[0]
    current = np.asarray(node_of, dtype=np.int64)
    if load.ndim != 1 or current.shape != (n,):
        raise InputError("loads/node_of", f"have shapes {load.shape}, {current.shape}", "both (P,)")
    if n and (not np.all(np.isfinite(load)) or load.min() < 0):
        raise InputError("loads", "has negative or non-finite entries", "seconds >= 0")
    nodes = machine.nodes
    if n and (current.min() < 0 or current.max() >= nodes):
        raise InputError("node_of", "has nodes out of range", f"[0, {nodes})")
    if partitioner not in PARTITIONERS:
        raise InputError("partitioner", f"got {partitioner!r}", f"one of {', '.join(PARTITIONERS)}")
    if not 0 <= alpha < 1 or not 0 <= eps < 1:
        raise InputError("alpha/eps", f"got {alpha!r}, {eps!r}", "fractions in [0, 1)")
    w = symmetric_affinity(comm, "comm", assume_symmetric=symmetric)
    if w.shape[0] != n:
        raise InputError("comm", f"has {w.shape[0]} rows", f"{n} (one per chare)")
    cores = machine.cores().astype(np.float64)
    tree = node_topology(machine.node)

    def network_level() -> tuple[np.ndarray, dict]:
        """Groups, smoothing and network layout (the master's part, algorithm 1)."""
        t = time.perf_counter()
        if partitioner == "keep" or nodes == 1:
            group = current.copy()
        elif partitioner == "treematch":
            group = group_balanced(w, nodes)
        else:
            group = partition(w, nodes, method="metis", vweights=np.maximum(load, 1e-12), seed=seed)
        kept = partitioner == "keep" or nodes == 1
        if not kept and cut_bytes(w, group) >= cut_bytes(w, current):
            group, kept = current.copy(), True  # the current nodes already cut fewer bytes
        if not kept:
            group = relabel_by_overlap(group, current, nodes)
        seconds["groups"] = time.perf_counter() - t

        t = time.perf_counter()
        group, swaps, moves = smooth_loads(load, group, cores, alpha)
        seconds["smoothing"] = time.perf_counter() - t

        t = time.perf_counter()
        if nodes > 1:
            host = map_to_network(group_affinity(w, group, nodes), machine)
            new_node = host[group]
        else:
            new_node = group
        seconds["network"] = time.perf_counter() - t

        info = {"swaps": swaps, "moves": moves, "kept": kept, "seconds": dict(seconds)}
        return new_node, info

    if mpi_comm is None or mpi_comm.Get_size() == 1:
        new_node, info = network_level()
    else:
        # The paper's master-worker scheme: rank 0 computes the network level while the
        # others wait without spinning, then every rank takes its share of the nodes.
        if mpi_comm.Get_rank() == 0:
            new_node, info = network_level()
            new_node = np.ascontiguousarray(new_node, dtype=np.int64)
        else:
            new_node, info = np.empty(n, dtype=np.int64), None
        _patient_bcast(mpi_comm, new_node)
        info = mpi_comm.bcast(info, root=0)
    swaps, moves, kept = info["swaps"], info["moves"], info["kept"]
    seconds.update(info["seconds"])

    position, refine_moves = node_level(
        w, new_node, machine, tree, mpi_comm, load=load, eps=eps, seconds=seconds
    )

    node_load = np.bincount(new_node, weights=load, minlength=nodes)
    stats = {
        "swaps": swaps,
        "moves": moves,
        "refine_moves": int(refine_moves),
        "node_imbalance": float(load_imbalance(node_load, cores)),
        "migrated": int((new_node != current).sum()),
        "kept_groups": bool(kept),
    }
    return TreeMatchLBResult(
        node_of=new_node, core_of=tree.physical()[position], seconds=seconds, stats=stats
    )


@dataclass(frozen=True)
class TreeMatchLB:
    """TreeMatchLB as a dynamic strategy: every ``interval`` steps, :func:`treematch_lb`.

    Needs the halo graph (``comm``) and the ``machine``; without them it only smooths the
    node loads. The measured loads are averaged over the steps since the last call.

    Parameters
    ----------
    interval
        Steps between calls.
    alpha, eps, partitioner, seed
        As :func:`treematch_lb`.
    initial
        Static strategy of the first placement (Charm++'s default block mapping).
    """

    interval: int = 10
    alpha: float = 0.05
    eps: float = 0.05
    partitioner: str = "treematch"
    seed: int = 0
    initial: str = "geometric"
    name: str = "treematch-lb"
    #: It maps onto the machine's tree and network: an executor without a machine model
    #: (the MPI runtime) gives it its ranks as one.
    needs_machine: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_int(self.interval, "treematch-lb interval")
        if self.partitioner not in PARTITIONERS:
            raise InputError(
                "treematch-lb partitioner",
                f"got {self.partitioner!r}",
                f"one of {', '.join(PARTITIONERS)}",
            )
        for key in ("alpha", "eps"):
            check_number(
                getattr(self, key),
                f"treematch-lb {key}",
                low=0.0,
                high=1.0,
                high_open=True,
                expected="a fraction in [0, 1)",
            )

    def rebalance(
        self,
        *,
        step: int,
        loads: np.ndarray,
        node_of: np.ndarray,
        cores: np.ndarray,
        state_bytes: np.ndarray,
        comm: sp.csr_array | None = None,
        machine: Machine | None = None,
    ) -> np.ndarray | None:
        """Run TreeMatchLB on the mean measured loads; ``None`` when nothing moves."""
        from grapeshot.place.rebalance import check_call  # imports place.dynamic

        loads, current, cores = check_call(loads, node_of, cores, self.name)
        load = loads.mean(axis=0)
        if comm is None or machine is None:
            new, swaps, moves = smooth_loads(load, current, cores, self.alpha)
            return new if (swaps or moves) else None
        result = treematch_lb(
            load,
            comm,
            current,
            machine,
            alpha=self.alpha,
            eps=self.eps,
            partitioner=self.partitioner,
            seed=self.seed,
            symmetric=True,  # the protocol's comm is the symmetric halo matrix
        )
        if np.array_equal(result.node_of, current):
            return None
        return result.node_of
