"""Charm++'s centralised balancers as pure functions of measured loads (spec §5.2-5.5).

Every balancer takes the per-object (partition) load of one measurement window, the nodes'
cores and, where it refines, the current placement, and returns a new ``node_of``. Loads are
compared **per core** (a node of ``c`` cores is a PE of speed ``c``, Charm++'s ``pe_speed``),
so heterogeneous nodes get proportional shares. Ties are broken by lower object id, then
lower node id, so every result is deterministic.

- :func:`greedy_lb` — GreedyLB: every object from scratch, heaviest first, onto the least
  loaded node (LPT). Migrates almost everything.
- :func:`refine_lb` — legacy RefineLB (``Refiner::multirefine``): keep the placement, move
  the largest object that fits from the heaviest node above ``t × average`` to the light node
  with the most room, for the smallest ``t`` of the grid ``1 + threshold + 0.01 j`` that
  succeeds (bisection over ``j``, each attempt from the original placement). Charm++ keeps
  the state of its *last* attempt, which may be a failed one (spec §5.3 quirk); we keep the
  smallest successful threshold. Where the Refiner's moves stall above ``t`` (granular
  loads: every object left on the donor too big for the room a receiver has), the attempt
  falls back on :class:`Repack` instead of failing, so ``t0`` is reached whenever GreedyLB
  reaches it (Charm++ raised ``t`` there and moved a few objects at a far looser ``t``).
- :func:`greedy_refine_lb` — GreedyRefineLB (TreeLB's ``GreedyRefine``): ``M = tolerance ×``
  the greedy makespan; heaviest first, an object stays on its node if it fits under ``M``,
  else goes to the least loaded node, and ``M`` grows to that node's load.
- :func:`greedy_comm_lb` — GreedyCommLB: greedy where placing an object away from its
  already placed peers charges ``alpha`` per message and ``beta`` per byte to both ends.
- :func:`refine_comm_lb` — RefineCommLB: refine where a node's load includes the message
  cost of the halo it sends off-node, and a move is scored by what it takes off the donor
  (its load and the cost of its cut edges) minus nothing: the receiver's new load, comm gain
  included, must stay under ``t × average``.

Each returns int64 ``(P,)``; :func:`migration_volume` states what a change costs.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

import numpy as np
from numba import njit
from scipy import sparse

from grapeshot.model.errors import InputError
from grapeshot.model.placement import load_imbalance

#: Charm++'s default message cost of GreedyCommLB / RefineCommLB (``+LBAlpha``, ``+LBBeta``):
#: seconds per message and per byte.
CHARM_ALPHA = 3.5e-5
CHARM_BETA = 8.5e-9
#: Step of RefineLB's threshold grid (``Refiner::multirefine``).
THRESHOLD_STEP = 0.01


# --- validation ---------------------------------------------------------------------------------


def check_loads(load: np.ndarray, cores: np.ndarray, node_of: np.ndarray | None = None):
    """Validate and convert ``(load, cores, node_of)``; raise one InputError naming the field.

    Returns
    -------
    tuple
        float64 ``(P,)`` loads, float64 ``(n,)`` cores, int64 ``(P,)`` nodes (or ``None``).
    """
    load = np.asarray(load)
    cores = np.asarray(cores)
    if load.ndim != 1 or not (
        np.issubdtype(load.dtype, np.floating) or np.issubdtype(load.dtype, np.integer)
    ):
        raise InputError("loads", f"has shape {load.shape}, dtype {load.dtype}", "(P,) numbers")
    load = np.ascontiguousarray(load, dtype=np.float64)
    if not np.all(np.isfinite(load)) or (load.size and load.min() < 0):
        raise InputError("loads", "has negative or non-finite entries", "finite loads >= 0")
    if cores.ndim != 1 or cores.size == 0 or not np.issubdtype(cores.dtype, np.number):
        raise InputError("cores", f"has shape {cores.shape}", "(nodes,) with at least one node")
    cores = np.ascontiguousarray(cores, dtype=np.float64)
    if not np.all(np.isfinite(cores)) or cores.min() <= 0:
        raise InputError("cores", "has entries <= 0", "cores >= 1 per node")
    if node_of is None:
        return load, cores, None
    node_of = np.asarray(node_of)
    if node_of.shape != load.shape or not np.issubdtype(node_of.dtype, np.integer):
        raise InputError(
            "node_of", f"has shape {node_of.shape}, dtype {node_of.dtype}", f"({load.size},) ints"
        )
    if node_of.size and (node_of.min() < 0 or node_of.max() >= cores.size):
        raise InputError("node_of", "has nodes out of range", f"nodes in [0, {cores.size})")
    return load, cores, np.ascontiguousarray(node_of, dtype=np.int64)


def check_comm(comm, n_parts: int) -> sparse.csr_array:
    """``comm`` as a symmetric float64 CSR array ``(P, P)``; InputError if it is not one."""
    if not sparse.issparse(comm):
        comm = np.asarray(comm)
        if comm.ndim != 2:
            raise InputError("comm", f"has shape {comm.shape}", f"({n_parts}, {n_parts}) bytes")
    c = sparse.csr_array(comm, dtype=np.float64)
    if c.shape != (n_parts, n_parts):
        raise InputError("comm", f"has shape {c.shape}", f"({n_parts}, {n_parts}) bytes")
    if c.nnz and (not np.all(np.isfinite(c.data)) or c.data.min() < 0):
        raise InputError("comm", "has negative or non-finite bytes", "bytes >= 0")
    c = ((c + c.T) * 0.5).tocsr()
    c.sort_indices()
    return c


def migration_volume(old: np.ndarray, new: np.ndarray, state_bytes: np.ndarray) -> tuple[int, int]:
    """``(objects moved, bytes moved)`` from placement ``old`` to ``new``."""
    moved = np.asarray(old) != np.asarray(new)
    return int(moved.sum()), int(np.asarray(state_bytes, dtype=np.int64)[moved].sum())


def max_over_avg(load: np.ndarray, node_of: np.ndarray, cores: np.ndarray) -> float:
    """Largest node load per core over the balanced load per core (1 is perfect balance).

    Charm++'s ``max/avg``: :func:`~grapeshot.model.placement.load_imbalance` of the node loads
    plus 1 (1 when there is no load at all).
    """
    cores = np.asarray(cores, dtype=np.float64)
    node_load = np.bincount(node_of, weights=load, minlength=cores.size)
    return 1.0 + float(load_imbalance(node_load, cores))


# --- GreedyLB -----------------------------------------------------------------------------------


@njit(cache=True)
def _greedy(load, order, cores):
    heap = [(0.0, j) for j in range(cores.shape[0])]
    heapq.heapify(heap)
    node_of = np.empty(load.shape[0], dtype=np.int64)
    for i in range(order.shape[0]):
        p = order[i]
        level, node = heapq.heappop(heap)
        node_of[p] = node
        heapq.heappush(heap, (level + load[p] / cores[node], node))
    return node_of


def heaviest_first(load: np.ndarray) -> np.ndarray:
    """Object ids by decreasing load, ties by increasing id (a stable sort)."""
    return np.argsort(-load, kind="stable")


def greedy_lb(load: np.ndarray, cores: np.ndarray) -> np.ndarray:
    """GreedyLB: heaviest object first onto the node of least load per core.

    Parameters
    ----------
    load
        float, ``(P,)``: measured load of each object (seconds, or work units).
    cores
        int, ``(n,)``: cores of each node.

    Returns
    -------
    numpy.ndarray
        int64, ``(P,)``: the node of each object.
    """
    load, cores, _ = check_loads(load, cores)
    return _greedy(load, heaviest_first(load), cores)


# --- RefineLB -----------------------------------------------------------------------------------


@njit(cache=True)
def _lists(node_of, n):
    """Doubly linked object lists per node: head[n], nxt[P], prv[P] (-1 ends)."""
    head = np.full(n, -1, dtype=np.int64)
    nxt = np.full(node_of.shape[0], -1, dtype=np.int64)
    prv = np.full(node_of.shape[0], -1, dtype=np.int64)
    for p in range(node_of.shape[0] - 1, -1, -1):
        h = head[node_of[p]]
        nxt[p] = h
        if h >= 0:
            prv[h] = p
        head[node_of[p]] = p
    return head, nxt, prv


@njit(cache=True)
def _unlink(p, node, head, nxt, prv):
    if prv[p] >= 0:
        nxt[prv[p]] = nxt[p]
    else:
        head[node] = nxt[p]
    if nxt[p] >= 0:
        prv[nxt[p]] = prv[p]
    nxt[p] = -1
    prv[p] = -1


@njit(cache=True)
def _link(p, node, head, nxt, prv):
    h = head[node]
    nxt[p] = h
    prv[p] = -1
    if h >= 0:
        prv[h] = p
    head[node] = p


@njit(cache=True)
def _refine(load, node_of, cores, t):
    """One ``Refiner::refine(t)`` from ``node_of`` (modified in place); True on success."""
    n = cores.shape[0]
    node_load = np.zeros(n)
    for p in range(load.shape[0]):
        node_load[node_of[p]] += load[p]
    # Charm++'s average: the balanced load per core, Σ load / Σ cores (the LIF's denominator).
    avg = load.sum() / cores.sum()
    limit = t * avg
    heavy = np.zeros(n, dtype=np.bool_)
    light = np.zeros(n, dtype=np.bool_)
    for j in range(n):
        pc = node_load[j] / cores[j]
        heavy[j] = pc > limit
        light[j] = pc < avg
    head, nxt, prv = _lists(node_of, n)
    while True:
        donor = -1
        worst = -1.0
        for j in range(n):
            if heavy[j] and node_load[j] / cores[j] > worst:
                worst = node_load[j] / cores[j]
                donor = j
        if donor < 0:
            return True
        heavy[donor] = False
        # The light node with the most room under the limit accepts the largest object.
        target = -1
        room = 0.0
        for j in range(n):
            if light[j] and j != donor:
                r = cores[j] * limit - node_load[j]
                if r > room:
                    room = r
                    target = j
        if target < 0:
            return False
        best = -1
        size = 0.0
        p = head[donor]
        while p >= 0:
            c = load[p]
            if c < room and (c > size or (c == size and best >= 0 and p < best)):
                size = c
                best = p
            p = nxt[p]
        if best < 0:
            return False
        _unlink(best, donor, head, nxt, prv)
        _link(best, target, head, nxt, prv)
        node_of[best] = target
        node_load[donor] -= size
        node_load[target] += size
        if node_load[target] / cores[target] > avg:
            light[target] = False
        pc = node_load[donor] / cores[donor]
        if pc > limit:
            heavy[donor] = True
        elif pc < avg:
            light[donor] = True


def _threshold_search(
    attempt: Callable[[int], tuple[bool, np.ndarray]], steps: int, node_of: np.ndarray
) -> np.ndarray:
    """Charm++'s threshold search: the placement of the tightest threshold step ``j`` in
    ``0 .. steps`` whose refinement succeeds (``attempt(j)``), found by bisection; the
    current placement if even the loosest fails (nothing helps)."""
    ok, best = attempt(0)
    if ok:
        return best
    ok, best = attempt(steps)
    if not ok:
        return node_of.copy()
    lo, hi = 0, steps
    while hi - lo > 1:
        mid = (lo + hi) // 2
        ok, trial = attempt(mid)
        if ok:
            hi, best = mid, trial
        else:
            lo = mid
    return best


def relabel(new: np.ndarray, old: np.ndarray, cores: np.ndarray) -> np.ndarray:
    """``new`` with its nodes renamed, among nodes of equal cores, so most objects stay put.

    Renaming nodes of equal cores keeps every node's load per core, so the LIF is the same;
    the names are chosen (an assignment problem per group of equal nodes) to maximise the
    objects whose node in ``old`` it keeps.

    Parameters
    ----------
    new, old
        int, ``(P,)``: two placements on the same ``(n,)`` nodes.
    cores
        ``(n,)``: cores of each node.

    Returns
    -------
    numpy.ndarray
        int64, ``(P,)``.
    """
    from scipy.optimize import linear_sum_assignment  # only this fallback needs it

    new = np.asarray(new, dtype=np.int64)
    old = np.asarray(old, dtype=np.int64)
    cores = np.asarray(cores)
    n = cores.size
    kept = np.bincount(new * n + old, minlength=n * n).reshape(n, n)  # [new node, old node]
    name = np.arange(n)
    for c in np.unique(cores):
        group = np.flatnonzero(cores == c)
        rows, cols = linear_sum_assignment(kept[np.ix_(group, group)], maximize=True)
        name[group[rows]] = group[cols]
    return name[new]


class Repack:
    """What a refinement falls back on when its own moves cannot reach a threshold.

    For a threshold ``t`` (a max/avg, :func:`max_over_avg`), two placements are tried from
    the current one: GreedyRefine at the bound ``t ×`` the balanced load per core (heaviest
    first, an object stays on its node while it fits under the bound, else goes to the least
    loaded node) and GreedyLB's placement with its nodes renamed to keep most objects in place
    (:func:`relabel`). The one that meets ``t`` with fewer objects moved is returned (ties:
    GreedyRefine's). So a refinement that uses it reaches ``t`` whenever GreedyLB does.

    Parameters
    ----------
    load
        float64, ``(P,)``: load of each object.
    node_of
        int64, ``(P,)``: the current placement (not modified).
    cores
        float64, ``(n,)``: cores of each node.
    """

    def __init__(self, load: np.ndarray, node_of: np.ndarray, cores: np.ndarray) -> None:
        self.load, self.node_of, self.cores = load, node_of, cores
        self._order: np.ndarray | None = None
        self._greedy: np.ndarray | None = None

    def __call__(self, t: float) -> np.ndarray | None:
        """int64 ``(P,)`` with no node above ``t ×`` the balanced load per core, or None."""
        load, cores = self.load, self.cores
        if self._order is None:  # built on first need: most refinements never get here
            self._order = heaviest_first(load)
            greedy = _greedy(load, self._order, cores)
            self._greedy = relabel(greedy, self.node_of, cores)
        bound = t * float(load.sum() / cores.sum())
        candidates = (
            _greedy_refine(load, self._order, self.node_of, cores, bound),
            self._greedy,
        )
        best, fewest = None, load.size + 1
        for trial in candidates:
            moved = int(np.count_nonzero(trial != self.node_of))
            if moved < fewest and max_over_avg(load, trial, cores) <= t:
                best, fewest = trial, moved
        return None if best is None else best.copy()


def refine_lb(
    load: np.ndarray,
    node_of: np.ndarray,
    cores: np.ndarray,
    *,
    threshold: float = 0.05,
    repack: bool = True,
) -> np.ndarray:
    """RefineLB with Charm++'s threshold search (``Refiner::multirefine``, spec §5.3).

    Each threshold ``t`` is tried with the Refiner's rule (objects leave nodes above
    ``t × average`` only, the largest that fits first, onto nodes below average); where that
    stalls above ``t``, with the :class:`Repack` from the same placement. So the result is
    within ``1 + threshold`` of the average whenever GreedyLB's placement is; otherwise it
    is within the first grid step at or above GreedyLB's max/avg, or no worse than the
    current placement where that is better.

    Parameters
    ----------
    load
        float, ``(P,)``: measured load of each object.
    node_of
        int, ``(P,)``: the current placement.
    cores
        int, ``(n,)``: cores of each node.
    threshold
        Smallest tolerated excess over the average, as a fraction (Charm++: 0.05, i.e. 1.05).
    repack
        ``False``: Charm++'s Refiner alone, as RefineLB runs it (no :class:`Repack` where it
        stalls; it then settles for a looser threshold, moving less): what ``charm-compare``
        puts beside Charm++'s own.

    Returns
    -------
    numpy.ndarray
        int64, ``(P,)``: the refined placement (a copy); unchanged if already within
        ``1 + threshold`` of the average.
    """
    load, cores, node_of = check_loads(load, cores, node_of)
    if not (isinstance(threshold, int | float) and math.isfinite(threshold) and threshold >= 0):
        raise InputError("refine threshold", f"got {threshold!r}", "a number >= 0")
    if load.sum() <= 0:
        return node_of.copy()
    ratio = max_over_avg(load, node_of, cores)
    t0 = 1.0 + threshold
    steps = max(0, math.ceil((ratio - t0) / THRESHOLD_STEP))

    packer = Repack(load, node_of, cores) if repack else None

    def attempt(j: int) -> tuple[bool, np.ndarray]:
        t = t0 + THRESHOLD_STEP * j
        trial = node_of.copy()
        if _refine(load, trial, cores, t):
            return True, trial
        if packer is None:
            return False, trial
        packed = packer(t)
        return packed is not None, (trial if packed is None else packed)

    return _threshold_search(attempt, steps, node_of)


# --- GreedyRefineLB -----------------------------------------------------------------------------


@njit(cache=True)
def _greedy_refine(load, order, node_of, cores, bound):
    n = cores.shape[0]
    level = np.zeros(n)
    heap = [(0.0, j) for j in range(n)]
    heapq.heapify(heap)
    new = np.empty(load.shape[0], dtype=np.int64)
    for i in range(order.shape[0]):
        p = order[i]
        old = node_of[p]
        if level[old] + load[p] / cores[old] <= bound:
            node = old
        else:
            while True:  # the least loaded node (entries go stale when a level rises)
                lv, node = heapq.heappop(heap)
                if lv == level[node]:
                    break
        level[node] += load[p] / cores[node]
        heapq.heappush(heap, (level[node], node))
        new[p] = node
        if level[node] > bound:
            bound = level[node]
    return new


def greedy_refine_lb(
    load: np.ndarray, node_of: np.ndarray, cores: np.ndarray, *, tolerance: float = 1.0
) -> np.ndarray:
    """GreedyRefineLB: greedy with a preference for staying put (spec §5.3, ``GreedyRefine``).

    ``M = tolerance ×`` the makespan (per core) of :func:`greedy_lb`; objects in decreasing
    load keep their node while it stays under ``M``, else go to the least loaded node, and
    ``M`` rises to that node's load. Returns int64 ``(P,)``.
    """
    load, cores, node_of = check_loads(load, cores, node_of)
    if not (isinstance(tolerance, int | float) and math.isfinite(tolerance) and tolerance >= 1):
        raise InputError("greedy-refine tolerance", f"got {tolerance!r}", "a number >= 1")
    order = heaviest_first(load)
    greedy = _greedy(load, order, cores)
    bound = tolerance * float((np.bincount(greedy, load, cores.size) / cores).max(initial=0.0))
    return _greedy_refine(load, order, node_of, cores, bound)


# --- GreedyCommLB -------------------------------------------------------------------------------


@njit(cache=True)
def _greedy_comm(load, order, cores, indptr, indices, data, alpha, beta):
    n = cores.shape[0]
    P = load.shape[0]
    level = np.zeros(n)
    heap = [(0.0, j) for j in range(n)]
    heapq.heapify(heap)
    node_of = np.full(P, -1, dtype=np.int64)
    with_node = np.zeros(n)  # comm of the current object with placed peers, per node
    touched = np.empty(n, dtype=np.int64)
    for i in range(order.shape[0]):
        p = order[i]
        while True:
            lv, least = heap[0]
            if lv == level[least]:
                break
            heapq.heappop(heap)
        total = 0.0
        k = 0
        for e in range(indptr[p], indptr[p + 1]):
            q = indices[e]
            if q == p or node_of[q] < 0:
                continue
            cost = 2.0 * alpha + beta * data[e]
            node = node_of[q]
            if with_node[node] == 0.0:
                touched[k] = node
                k += 1
            with_node[node] += cost
            total += cost
        best = least
        best_cost = level[least] + (total - with_node[least] + load[p]) / cores[least]
        for j in range(k):
            node = touched[j]
            c = level[node] + (total - with_node[node] + load[p]) / cores[node]
            if c < best_cost or (c == best_cost and node < best):
                best_cost = c
                best = node
        node_of[p] = best
        level[best] += (total - with_node[best] + load[p]) / cores[best]
        heapq.heappush(heap, (level[best], best))
        for j in range(k):  # each peer's node pays its end of the messages
            node = touched[j]
            if node != best:
                level[node] += with_node[node] / cores[node]
                heapq.heappush(heap, (level[node], node))
            with_node[node] = 0.0
    return node_of


def greedy_comm_lb(
    load: np.ndarray,
    cores: np.ndarray,
    comm,
    *,
    alpha: float = CHARM_ALPHA,
    beta: float = CHARM_BETA,
) -> np.ndarray:
    """GreedyCommLB (spec §5.4): greedy where cutting a halo edge costs both ends.

    Parameters
    ----------
    load
        float, ``(P,)``: measured load (seconds: the comm cost is added in seconds).
    cores
        int, ``(n,)``: cores per node.
    comm
        ``(P, P)`` sparse, symmetric: bytes two objects exchange per step (one message each
        way per step).
    alpha, beta
        Seconds per message and per byte (Charm++ defaults; the simulator passes the
        machine's latency and 1 / bandwidth).

    Returns
    -------
    numpy.ndarray
        int64, ``(P,)``.
    """
    load, cores, _ = check_loads(load, cores)
    c = check_comm(comm, load.size)
    return _greedy_comm(
        load, heaviest_first(load), cores, c.indptr.astype(np.int64),
        c.indices.astype(np.int64), c.data, float(alpha), float(beta),
    )  # fmt: skip


# --- RefineCommLB -------------------------------------------------------------------------------


@njit(cache=True)
def _comm_loads(load, node_of, n, indptr, indices, data, alpha, beta):
    """Per node: compute load + cost of the messages it sends off-node."""
    node_load = np.zeros(n)
    for p in range(load.shape[0]):
        node_load[node_of[p]] += load[p]
        for e in range(indptr[p], indptr[p + 1]):
            q = indices[e]
            if node_of[q] != node_of[p]:
                node_load[node_of[p]] += alpha + 0.5 * beta * data[e]
    return node_load


@njit(cache=True)
def _refine_comm(load, node_of, cores, t, indptr, indices, data, alpha, beta):
    n = cores.shape[0]
    node_load = _comm_loads(load, node_of, n, indptr, indices, data, alpha, beta)
    head, nxt, prv = _lists(node_of, n)
    to_node = np.zeros(n)
    while True:
        avg = node_load.sum() / cores.sum()
        limit = t * avg
        donor = -1
        worst = limit
        for j in range(n):
            if node_load[j] / cores[j] > worst:
                worst = node_load[j] / cores[j]
                donor = j
        if donor < 0:
            return True
        best = -1
        best_to = -1
        best_score = 0.0
        best_gain = 0.0
        p = head[donor]
        while p >= 0:
            # Cost of p's edges, and its edges per node: moving p to j uncuts edges to j,
            # cuts those to the donor; both ends' send costs change.
            own = 0.0
            for e in range(indptr[p], indptr[p + 1]):
                q = indices[e]
                c = alpha + 0.5 * beta * data[e]
                to_node[node_of[q]] += c
                if node_of[q] != donor:
                    own += c
            for j in range(n):
                if j == donor or node_load[j] / cores[j] >= avg:
                    continue
                # The donor loses p's load, its sends, and gains the sends of its objects
                # to p; j gains p's load, the sends of p except to j, loses sends to p.
                d_new = node_load[donor] - load[p] - own + to_node[donor]
                j_new = node_load[j] + load[p] + (own + to_node[donor] - to_node[j]) - to_node[j]
                if j_new / cores[j] >= limit:
                    continue
                score = node_load[donor] - d_new
                gain = to_node[j]
                if score > best_score or (score == best_score and gain > best_gain):
                    best_score = score
                    best_gain = gain
                    best = p
                    best_to = j
            for e in range(indptr[p], indptr[p + 1]):
                to_node[node_of[indices[e]]] = 0.0
            p = nxt[p]
        if best < 0:
            return False
        _unlink(best, donor, head, nxt, prv)
        _link(best, best_to, head, nxt, prv)
        node_of[best] = best_to
        node_load = _comm_loads(load, node_of, n, indptr, indices, data, alpha, beta)


def refine_comm_lb(
    load: np.ndarray,
    node_of: np.ndarray,
    cores: np.ndarray,
    comm,
    *,
    threshold: float = 0.003,
    alpha: float = CHARM_ALPHA,
    beta: float = CHARM_BETA,
) -> np.ndarray:
    """RefineCommLB (spec §5.5): refine on compute + message cost, with the threshold search.

    A node's load is its objects' load plus ``alpha + beta × bytes / 2`` for each halo edge
    it cuts (the send side of the exchange). Moves take objects off the heaviest node above
    ``t × average`` to a node below average, choosing the move that lowers the donor most
    (ties: the larger comm gain with the receiver), as long as the receiver stays under
    ``t × average``; the average is recomputed after each move. ``t`` runs over
    ``1 + threshold + 0.01 j`` as in :func:`refine_lb`. Returns int64 ``(P,)``.
    """
    load, cores, node_of = check_loads(load, cores, node_of)
    if not (isinstance(threshold, int | float) and math.isfinite(threshold) and threshold >= 0):
        raise InputError("refine threshold", f"got {threshold!r}", "a number >= 0")
    c = check_comm(comm, load.size)
    args = (c.indptr.astype(np.int64), c.indices.astype(np.int64), c.data, float(alpha),
            float(beta))  # fmt: skip
    base = _comm_loads(load, node_of, cores.size, *args)
    if base.sum() <= 0:
        return node_of.copy()
    ratio = 1.0 + float(load_imbalance(base, cores))
    t0 = 1.0 + threshold
    steps = max(0, math.ceil((ratio - t0) / THRESHOLD_STEP))

    def attempt(j: int) -> tuple[bool, np.ndarray]:
        trial = node_of.copy()
        return bool(_refine_comm(load, trial, cores, t0 + THRESHOLD_STEP * j, *args)), trial

    return _threshold_search(attempt, steps, node_of)
