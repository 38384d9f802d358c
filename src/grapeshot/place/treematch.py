"""TreeMatch: map communicating tasks onto the leaves of a tree of cores (spec §2).

The algorithm groups bottom-up (spec §2.3): the tasks are grouped into the children of the
lowest level by affinity, the affinity matrix is aggregated over the groups, the groups are
grouped into the next level, and so on to the root; then the group tree is laid on the leaves
top-down. The arities are decomposed first (16 → 2,2,2,2, §2.2), which the reference does by
default and which matters for quality. Each level's grouping is chosen by the number of
candidate groups ``C(m, k)`` of ``m`` items into groups of ``k`` (§2.4):

- few partitions of the level at all (≤ :data:`EXHAUSTIVE_LIMIT`): exhaustive
  branch and bound, the optimum;
- ``C(m, k) ≤ 30000``: every candidate group enumerated and valued, then greedy selections
  (as numbered, cheapest first from 10 starts, weighted degree), the best kept;
- ``k = 2`` beyond that: heavy-edge matching, pairs by decreasing affinity (the reference's
  bucket sort, here an exact sort of the sparse pairs);
- ``k ≥ 3`` beyond that: greedy growth, each group seeded with the free item of largest
  affinity and grown by the free item most attached to it (stronger than the reference's
  "fast" grouping, which only completes the lowest-numbered items).

Oversubscription (§2.2, TreeMatchLB's algorithm 2): with more tasks than cores, a level of
``r`` slots (cost 0) is added under every core, ``r = ceil(n / cores)`` by default. The tasks
are grouped into per-core groups with the same bottom-up machinery, then the counts are
balanced — every core gets ``floor(n / cores)`` or ``ceil(n / cores)`` tasks — by moving the
tasks least attached to their group out of overfull cores.

Costs (:func:`mapping_cost`): SUM_COM, MAX_COM and hop-bytes of spec §1 on the symmetric
part ``S = (A + Aᵀ) / 2`` of the matrix, over pairs ``i < j``, with distances computed
bottom-up so they are right for any arity list.

Everything is deterministic: no time budgets (the reference's 0.1 s budgets make it depend on
the machine's speed), ties broken by index.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit

from grapeshot.model.errors import InputError, check_int
from grapeshot.model.groups import group_order
from grapeshot.model.topology import TreeTopology

#: Candidate groups up to which a level enumerates every group (the reference's constant).
ENUM_LIMIT = 30000
#: Set partitions of a level up to which the exact branch and bound runs.
EXHAUSTIVE_LIMIT = 2000
#: Greedy starts of the enumerated selection (the reference's 10).
STARTS = 10
#: Rounds of locally dominant matching before the sequential heavy-edge pass.
MATCH_ROUNDS = 8
#: Passes of size-constrained label propagation on the per-core groups (0: none).
REFINE_PASSES = 1
#: Slack of a group's size during those passes (the counts are balanced exactly after).
REFINE_SLACK = 0.03
#: Bonus of the as-numbered grouping in the enumerated selection (the reference's 1.001).
PACKED_BONUS = 1.001


@dataclass(frozen=True, eq=False)
class TreeMatchResult:
    """Where TreeMatch put every task.

    Attributes
    ----------
    core_of
        int64 ``(n,)``: physical id of the core (leaf of the tree given) of each task.
    position
        int64 ``(n,)``: tree-order position of that core.
    oversub
        Slots per core used (1: no oversubscription).
    seconds
        Wall time of the mapping, seconds.
    heuristics
        The grouping used at each level, bottom-up (``"exhaustive"``, ``"enumerate"``,
        ``"matching"``, ``"growth"``, ``"trivial"``).
    """

    core_of: np.ndarray
    position: np.ndarray
    oversub: int
    seconds: float
    heuristics: tuple[str, ...]


# --- input ---------------------------------------------------------------------------------


@njit(cache=True)
def _drop_diagonal(indptr, indices, data):
    n = indptr.shape[0] - 1
    ptr = np.zeros(n + 1, dtype=np.int64)
    out_idx = np.empty(indices.shape[0], dtype=np.int32)
    out_val = np.empty(indices.shape[0])
    k = 0
    for i in range(n):
        for e in range(indptr[i], indptr[i + 1]):
            if indices[e] != i and data[e] != 0.0:
                out_idx[k] = indices[e]
                out_val[k] = data[e]
                k += 1
        ptr[i + 1] = k
    return ptr, out_idx[:k].copy(), out_val[:k].copy()


def symmetric_affinity(
    matrix, where: str = "matrix", *, assume_symmetric: bool = False
) -> sp.csr_array:
    """The affinity ``S = (A + Aᵀ) / 2`` of a square matrix, zero diagonal, float64 CSR.

    ``assume_symmetric`` skips the transpose for a sparse matrix the caller knows is symmetric
    (the simulator's halo matrix): only the diagonal is dropped.

    Raises
    ------
    InputError
        If ``matrix`` is not a square 2-D matrix of finite numbers ``>= 0``.
    """
    if getattr(matrix, "_grapeshot_affinity", False):
        return matrix  # already made by this function (and not changed since: a fresh object)
    if assume_symmetric and sp.issparse(matrix) and matrix.shape[0] == matrix.shape[1]:
        a = sp.csr_array(matrix)
        if not np.issubdtype(a.dtype, np.floating) and not np.issubdtype(a.dtype, np.integer):
            raise InputError(where, f"has dtype {a.dtype}", "real numbers >= 0")
        a.sum_duplicates()
        data = a.data.astype(np.float64, copy=False)
        if data.size and (not np.all(np.isfinite(data)) or data.min() < 0):
            raise InputError(where, "has negative or non-finite entries", "numbers >= 0")
        ptr, idx, val = _drop_diagonal(
            a.indptr.astype(np.int64, copy=False), a.indices.astype(np.int32, copy=False), data
        )
        out = sp.csr_array((val, idx, ptr), shape=a.shape)
        out._grapeshot_affinity = True
        return out
    if sp.issparse(matrix):
        a = sp.csr_array(matrix)
    else:
        try:
            arr = np.asarray(matrix, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(where, "is not numeric", "a square matrix of numbers >= 0") from None
        if arr.ndim != 2:
            raise InputError(where, f"has {arr.ndim} dimensions", "a square matrix")
        a = sp.csr_array(arr)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise InputError(where, f"has shape {a.shape}", "a square matrix")
    if not np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.complexfloating):
        raise InputError(where, f"has dtype {a.dtype}", "real numbers >= 0")
    a = a.astype(np.float64)
    if a.nnz and (not np.all(np.isfinite(a.data)) or a.data.min() < 0):
        raise InputError(where, "has negative or non-finite entries", "numbers >= 0")
    s = ((a + a.T) * 0.5).tocoo()
    keep = (s.row != s.col) & (s.data != 0)
    n = a.shape[0]
    out = sp.csr_array((s.data[keep], (s.row[keep], s.col[keep])), shape=(n, n))
    out.sum_duplicates()
    out._grapeshot_affinity = True
    return out


# --- grouping heuristics ----------------------------------------------------------------------


@njit(cache=True)
def _dominant_matching(m, indptr, indices, data, rounds):
    """Greedy heavy-edge matching without a global sort: locally dominant pairs.

    Each round every free item points at its heaviest free neighbour (ties: lower id); mutual
    pointers are matched. An edge heavier than all its free neighbours' edges is matched in
    the first round it is dominant, so the result is the greedy matching of the sort by
    weight (ties broken by ids instead of a bucket order). Leftovers pair in index order.
    """
    mate = np.full(m, -1, dtype=np.int32)
    best = np.full(m, -1, dtype=np.int32)
    active = np.arange(m)
    n_active = m
    for _ in range(rounds):
        for t in range(n_active):
            i = active[t]
            if best[i] >= 0 and mate[best[i]] < 0:
                # Still free, so still the heaviest free neighbour (neighbours are only ever
                # taken, never freed): no need to scan the row again.
                continue
            b = -1
            bw = 0.0
            for e in range(indptr[i], indptr[i + 1]):
                j = indices[e]
                if mate[j] < 0 and j != i:
                    if data[e] > bw or (data[e] == bw and b >= 0 and j < b):
                        b = j
                        bw = data[e]
            best[i] = b
        matched = 0
        for t in range(n_active):
            i = active[t]
            j = best[i]
            if j > i and best[j] == i and mate[i] < 0 and mate[j] < 0:
                mate[i] = j
                mate[j] = i
                matched += 1
        keep = 0
        for t in range(n_active):
            i = active[t]
            if mate[i] < 0 and best[i] >= 0:
                active[keep] = i
                keep += 1
        n_active = keep
        if matched == 0 or n_active == 0:
            break
    # Whatever is left (no free neighbour, or a long chain of ties): heaviest free neighbour.
    for i in range(m):
        if mate[i] >= 0:
            continue
        b = -1
        bw = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            if mate[j] < 0 and j != i and (data[e] > bw or (data[e] == bw and b >= 0 and j < b)):
                b = j
                bw = data[e]
        if b >= 0:
            mate[i] = b
            mate[b] = i
    groups = np.empty((m // 2, 2), dtype=np.int64)
    g = 0
    pending = -1
    for i in range(m):
        if mate[i] >= 0:
            if mate[i] > i:
                groups[g, 0] = i
                groups[g, 1] = mate[i]
                g += 1
        elif pending < 0:
            pending = i
        else:
            groups[g, 0] = pending
            groups[g, 1] = i
            g += 1
            pending = -1
    return groups


def csr_arrays(w: sp.csr_array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of ``w`` as the compiled kernels take them: int64 offsets,
    int32 columns (half the memory traffic; the graphs are < 2**31), no copy when they are."""
    return w.indptr.astype(np.int64, copy=False), w.indices.astype(np.int32, copy=False), w.data


def _matching(w: sp.csr_array) -> np.ndarray:
    return _dominant_matching(
        w.shape[0],
        *csr_arrays(w),
        MATCH_ROUNDS,
    )


@njit(cache=True)
def _growth(m, k, indptr, indices, data, seeds):
    """Grow ``m / k`` groups: seed = next free item of ``seeds``; add the most attached."""
    free = np.ones(m, dtype=np.bool_)
    gain = np.zeros(m)
    touched = np.empty(m, dtype=np.int64)
    groups = np.empty((m // k, k), dtype=np.int64)
    g = 0
    cursor = 0
    for _ in range(m // k):
        while not free[seeds[cursor]]:
            cursor += 1
        s = seeds[cursor]
        free[s] = False
        groups[g, 0] = s
        nt = 0
        for e in range(indptr[s], indptr[s + 1]):
            j = indices[e]
            if free[j]:
                if gain[j] == 0.0:
                    touched[nt] = j
                    nt += 1
                gain[j] += data[e]
        for slot in range(1, k):
            best = -1
            best_gain = 0.0
            for t in range(nt):
                j = touched[t]
                if free[j] and (gain[j] > best_gain or (gain[j] == best_gain and j < best)):
                    best = j
                    best_gain = gain[j]
            if best < 0:
                c = cursor
                while not free[seeds[c]]:
                    c += 1
                best = seeds[c]
            free[best] = False
            groups[g, slot] = best
            for e in range(indptr[best], indptr[best + 1]):
                j = indices[e]
                if free[j]:
                    if gain[j] == 0.0:
                        touched[nt] = j
                        nt += 1
                    gain[j] += data[e]
        for t in range(nt):
            gain[touched[t]] = 0.0
        g += 1
    return groups


def _grow(w: sp.csr_array, k: int, blocks: int = 1) -> np.ndarray:
    m = w.shape[0]
    degree = np.asarray(w.sum(axis=1)).ravel()
    block = np.arange(m) // (m // blocks)
    seeds = np.lexsort((np.arange(m), -degree, block)).astype(np.int64)
    return _growth(
        m,
        k,
        *csr_arrays(w),
        seeds,
    )


@njit(cache=True)
def _select(order, members, values, m, k, n_starts):
    """Greedy completion from up to ``n_starts`` starts along ``order``; best total."""
    n_groups = m // k
    best_total = np.inf
    best = np.empty(n_groups, dtype=np.int64)
    chosen = np.empty(n_groups, dtype=np.int64)
    used = np.zeros(m, dtype=np.bool_)
    for start in range(min(n_starts, order.shape[0])):
        used[:] = False
        count = 0
        total = 0.0
        for pos in range(start, start + order.shape[0]):
            c = order[pos % order.shape[0]]
            ok = True
            for t in range(k):
                if used[members[c, t]]:
                    ok = False
                    break
            if not ok:
                continue
            for t in range(k):
                used[members[c, t]] = True
            chosen[count] = c
            count += 1
            total += values[c]
            if count == n_groups:
                break
        if count == n_groups and total < best_total:
            best_total = total
            best[:] = chosen
    return best, best_total


def _enumerate(w: np.ndarray, k: int) -> np.ndarray:
    """Every ``k``-subset valued (traffic leaving it), then greedy selections (§2.4.1)."""
    m = w.shape[0]
    members = np.array(list(itertools.combinations(range(m), k)), dtype=np.int64)
    rowsum = w.sum(axis=1)
    inside = np.zeros(len(members))
    for a in range(k):
        for b in range(k):
            inside += w[members[:, a], members[:, b]]
    values = rowsum[members].sum(axis=1) - inside
    packed = np.arange(m).reshape(m // k, k)
    packed_total = sum(rowsum[g].sum() - w[np.ix_(g, g)].sum() for g in packed) / PACKED_BONUS
    best_groups, best_total = packed, packed_total
    # Cheapest first, then weighted degree (values of conflicting groups / own value).
    cheapest = np.lexsort((np.arange(len(values)), values)).astype(np.int64)
    sel, total = _select(cheapest, members, values, m, k, STARTS)
    if total < best_total:
        best_groups, best_total = members[sel], total
    # Σ of the values of the groups sharing a member, counted once per shared member.
    per_item = np.bincount(members.ravel(), weights=np.repeat(values, k), minlength=m)
    weight = per_item[members].sum(axis=1) - k * values
    score = np.where(values > 0, weight / np.where(values > 0, values, 1.0), 0.0)
    degree_order = np.lexsort((np.arange(len(values)), -score)).astype(np.int64)
    sel, total = _select(degree_order, members, values, m, k, STARTS)
    if total < best_total:
        best_groups = members[sel]
    return np.asarray(best_groups, dtype=np.int64)


def _partitions_count(m: int, k: int) -> int:
    """Number of ways to split ``m`` items into ``m / k`` unordered groups of ``k``."""
    g = m // k
    return math.factorial(m) // (math.factorial(k) ** g * math.factorial(g))


def _exhaustive(w: np.ndarray, k: int) -> np.ndarray:
    """The grouping of least traffic leaving the groups, by branch and bound."""
    m = w.shape[0]
    # Minimising the traffic leaving the groups = maximising the traffic inside them.
    best: list = [-1.0, None]

    def inside(group: tuple[int, ...]) -> float:
        return float(w[np.ix_(group, group)].sum())

    upper_pair = np.sort(w, axis=1)[:, ::-1][:, : k - 1].sum(axis=1)

    def recurse(free: list[int], chosen: list[tuple[int, ...]], value: float) -> None:
        if not free:
            if value > best[0]:
                best[0], best[1] = value, list(chosen)
            return
        if value + float(upper_pair[free].sum()) <= best[0]:
            return
        first, rest = free[0], free[1:]
        for others in itertools.combinations(rest, k - 1):
            group = (first, *others)
            left = [x for x in rest if x not in others]
            chosen.append(group)
            recurse(left, chosen, value + inside(group))
            chosen.pop()

    recurse(list(range(m)), [], 0.0)
    return np.asarray(best[1], dtype=np.int64)


def group_level(w: sp.csr_array, k: int, blocks: int = 1) -> tuple[np.ndarray, str]:
    """Split the ``m`` items of affinity ``w`` into ``m / k`` groups of ``k`` (spec §2.4).

    With ``blocks > 1`` the items form that many equal, contiguous blocks with no affinity
    between them (one per node): only the block-safe heuristics run (matching, growth with
    seeds in block order), so groups never straddle two blocks and come out block by block.

    Returns
    -------
    (groups, heuristic)
        int64 ``(m / k, k)`` item ids, and the name of the heuristic used.
    """
    m = w.shape[0]
    if m % k:
        raise InputError("treematch level", f"{m} items", f"a multiple of the arity {k}")
    if k == 1:
        return np.arange(m, dtype=np.int64).reshape(m, 1), "trivial"
    if m == k:
        return np.arange(m, dtype=np.int64).reshape(1, m), "trivial"
    if w.nnz == 0:
        return np.arange(m, dtype=np.int64).reshape(m // k, k), "trivial"
    if blocks > 1:
        if k == 2:
            return _matching(w), "matching"
        return _grow(w, k, blocks), "growth"
    if m <= 24 and _partitions_count(m, k) <= EXHAUSTIVE_LIMIT:
        return _exhaustive(w.toarray(), k), "exhaustive"
    if math.comb(m, k) <= ENUM_LIMIT:
        return _enumerate(w.toarray(), k), "enumerate"
    if k == 2:
        return _matching(w), "matching"
    return _grow(w, k), "growth"


@njit(cache=True)
def _aggregate(indptr, indices, data, label, order, ptr):
    """CSR of the aggregated matrix; rows in group order, columns in first-seen order.

    ``order[ptr[g]:ptr[g + 1]]`` lists the items of group ``g``.
    """
    n_groups = ptr.shape[0] - 1
    out_ptr = np.zeros(n_groups + 1, dtype=np.int64)
    out_idx = np.empty(indices.shape[0], dtype=np.int32)
    out_val = np.empty(indices.shape[0])
    where = np.full(n_groups, -1, dtype=np.int32)
    nnz = 0
    for g in range(n_groups):
        start = nnz
        for pos in range(ptr[g], ptr[g + 1]):
            i = order[pos]
            for e in range(indptr[i], indptr[i + 1]):
                h = label[indices[e]]
                if h == g:
                    continue
                if where[h] < 0:
                    where[h] = nnz
                    out_idx[nnz] = h
                    out_val[nnz] = 0.0
                    nnz += 1
                out_val[where[h]] += data[e]
        for e in range(start, nnz):
            where[out_idx[e]] = -1
        out_ptr[g + 1] = nnz
    return out_ptr, out_idx[:nnz], out_val[:nnz]


@njit(cache=True)
def _aggregate_in_index_order(indptr, indices, data, label, n_groups):
    """As :func:`_aggregate` with every group's items in increasing index order.

    The rows are read once in order and their entries scattered to their group's slice, then
    each slice is merged in place: sequential reads instead of one random row per item, the
    same sums in the same order (so the same bits) and the same first-seen column order.
    """
    n = indptr.shape[0] - 1
    cap = np.zeros(n_groups + 1, dtype=np.int64)
    for i in range(n):
        cap[label[i] + 1] += indptr[i + 1] - indptr[i]
    for g in range(n_groups):
        cap[g + 1] += cap[g]
    fill = cap[:-1].copy()
    out_idx = np.empty(cap[n_groups], dtype=np.int32)
    out_val = np.empty(cap[n_groups])
    for i in range(n):
        g = label[i]
        o = fill[g]
        for e in range(indptr[i], indptr[i + 1]):
            out_idx[o] = label[indices[e]]
            out_val[o] = data[e]
            o += 1
        fill[g] = o
    out_ptr = np.zeros(n_groups + 1, dtype=np.int64)
    where = np.full(n_groups, -1, dtype=np.int32)
    nnz = 0
    for g in range(n_groups):
        start = nnz
        # In place: the merged row never overtakes the entry being read (nnz <= e).
        for e in range(cap[g], cap[g + 1]):
            h = out_idx[e]
            if h == g:
                continue
            if where[h] < 0:
                where[h] = nnz
                out_idx[nnz] = h
                out_val[nnz] = out_val[e]
                nnz += 1
            else:
                out_val[where[h]] += out_val[e]
        for e in range(start, nnz):
            where[out_idx[e]] = -1
        out_ptr[g + 1] = nnz
    return out_ptr, out_idx[:nnz], out_val[:nnz]


@njit(cache=True)
def _in_index_order(label, order):
    """Whether ``order`` lists every group's items in increasing index order."""
    for p in range(1, order.shape[0]):
        if label[order[p]] == label[order[p - 1]] and order[p] < order[p - 1]:
            return False
    return True


def aggregate(
    w: sp.csr_array, label: np.ndarray, n_groups: int, order: np.ndarray | None = None
) -> sp.csr_array:
    """``W'[g, h] = Σ_{a∈g, b∈h} W[a, b]``, zero diagonal (spec §2.3 AGGREGATE).

    ``order`` optionally lists the items group by group (e.g. the groups' rows flattened),
    saving a sort of ``label``.
    """
    n_groups = int(n_groups)
    # int32 ids: half the memory traffic of the random accesses (the graphs are < 2**31).
    label32 = np.asarray(label, dtype=np.int32)
    indptr = w.indptr.astype(np.int64, copy=False)
    indices = w.indices.astype(np.int32, copy=False)
    data = np.asarray(w.data, dtype=np.float64)
    if order is None or _in_index_order(label32, np.asarray(order, dtype=np.int64)):
        # Groups' items in index order (a stable sort; pairs from the matching): the same
        # result, computed reading the rows in order.
        ptr, idx, val = _aggregate_in_index_order(indptr, indices, data, label32, n_groups)
    else:
        counts = np.bincount(np.asarray(label, dtype=np.int64), minlength=n_groups)
        ptr = np.zeros(n_groups + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        ptr, idx, val = _aggregate(
            indptr, indices, data, label32, np.asarray(order, dtype=np.int64), ptr
        )
    return sp.csr_array((val, idx, ptr), shape=(n_groups, n_groups))


# --- balancing the per-core counts -------------------------------------------------------------


@njit(cache=True)
def _balance_targets(label, block_of, n_blocks, cores):
    """Counts and balanced target counts of every core group; tasks in overfull groups."""
    n_real = label.shape[0]
    n_groups = n_blocks * cores
    counts = np.zeros(n_groups, dtype=np.int64)
    per_block = np.zeros(n_blocks, dtype=np.int64)
    for t in range(n_real):
        counts[label[t]] += 1
        per_block[block_of[t]] += 1
    target = np.empty(n_groups, dtype=np.int64)
    for b in range(n_blocks):
        q = per_block[b] // cores
        extra = per_block[b] % cores
        # The fullest cores keep the q + 1 places (ties: lower id).
        order = np.argsort(-counts[b * cores : (b + 1) * cores], kind="mergesort")
        for i in range(cores):
            target[b * cores + order[i]] = q + (1 if i < extra else 0)
    n_over = 0
    for t in range(n_real):
        if counts[label[t]] > target[label[t]]:
            n_over += 1
    over = np.empty(n_over, dtype=np.int64)
    k = 0
    for t in range(n_real):
        if counts[label[t]] > target[label[t]]:
            over[k] = t
            k += 1
    return counts, target, over


@njit(cache=True)
def _attachment_of(tasks, label, indptr, indices, data):
    """Affinity of each of ``tasks`` to the other tasks of its group."""
    attach = np.zeros(tasks.shape[0])
    for i in range(tasks.shape[0]):
        t = tasks[i]
        g = label[t]
        acc = 0.0
        for e in range(indptr[t], indptr[t + 1]):
            if label[indices[e]] == g:
                acc += data[e]
        attach[i] = acc
    return attach


@njit(cache=True)
def _balance_moves(label, block_of, n_blocks, cores, counts, target, by_attach):
    """Move tasks (least attached first) from overfull to underfull cores of their block.

    ``by_attach`` lists (at least) the tasks of the overfull groups, least attached first: a
    group that is not overfull never becomes so (groups only receive up to their target).
    """
    under = np.arange(n_blocks) * cores
    for i in range(by_attach.shape[0]):
        t = by_attach[i]
        g = label[t]
        if counts[g] <= target[g]:
            continue
        b = block_of[t]
        while counts[under[b]] >= target[under[b]]:
            under[b] += 1
        label[t] = under[b]
        counts[g] -= 1
        counts[under[b]] += 1
    return label


def _balance(label, block_of, n_blocks, cores, indptr, indices, data):
    """Balance the per-core counts of every block (node): ``q`` or ``q + 1`` tasks per core.

    Groups ``b * cores .. (b + 1) * cores - 1`` are the cores of block ``b``. Tasks leave an
    overfull group least attached first, for an underfull group of their block.
    """
    counts, target, over = _balance_targets(label, block_of, n_blocks, cores)
    if len(over) == 0:
        return label  # balanced already (e.g. groups built by exact halving)
    # Only the tasks of overfull groups can move; a stable sort of them keeps the order of
    # the stable sort of all tasks.
    attach = _attachment_of(over, label, indptr, indices, data)
    by_attach = over[np.argsort(attach, kind="stable")]
    return _balance_moves(label, block_of, n_blocks, cores, counts, target, by_attach)


@njit(cache=True)
def _label_propagation(indptr, indices, data, label, n_groups, cap, passes):
    """Move each task to the group it is most attached to while that group is under ``cap``."""
    n = label.shape[0]
    counts = np.zeros(n_groups, dtype=np.int64)
    for t in range(n):
        counts[label[t]] += 1
    acc = np.zeros(n_groups)
    touched = np.empty(n_groups, dtype=np.int64)
    moved = 0
    for _ in range(passes):
        step = 0
        for t in range(n):
            g = label[t]
            nt = 0
            for e in range(indptr[t], indptr[t + 1]):
                h = label[indices[e]]
                if acc[h] == 0.0:
                    touched[nt] = h
                    nt += 1
                acc[h] += data[e]
            best = g
            best_w = acc[g]
            for i in range(nt):
                h = touched[i]
                if h != g and counts[h] < cap[h] and acc[h] > best_w:
                    best = h
                    best_w = acc[h]
            for i in range(nt):
                acc[touched[i]] = 0.0
            if best != g:
                label[t] = best
                counts[g] -= 1
                counts[best] += 1
                step += 1
        moved += step
        if step == 0:
            break
    return moved


def refine_groups(
    w: sp.csr_array, label: np.ndarray, block_of: np.ndarray, blocks: int, cores: int
) -> np.ndarray:
    """Lower the affinity cut between per-core groups, then balance their counts again.

    Size-constrained label propagation (as in KaHIP's refinement): every task moves to the
    group it is most attached to if that group holds fewer than ``(1 + REFINE_SLACK)`` × its
    share; :data:`REFINE_PASSES` passes; then :func:`_balance` restores floor/ceil counts.
    Not in the C reference; on CommBench's random graph (1M chares into 1,024 groups) it cuts
    ~7 % fewer bytes. Used for flat groups only (:func:`group_balanced`).
    """
    n_groups = blocks * cores
    per_block = np.bincount(block_of, minlength=blocks)
    share = -(-per_block // cores)
    cap = np.repeat(share + np.maximum(1, np.ceil(share * REFINE_SLACK)).astype(np.int64), cores)
    label = np.asarray(label, dtype=np.int64).copy()
    indptr, indices, data = csr_arrays(w)
    _label_propagation(indptr, indices, data, label, n_groups, cap, REFINE_PASSES)
    return _balance(label, block_of, blocks, cores, indptr, indices, data)


# --- the algorithm ------------------------------------------------------------------------------


def _check_oversub(oversub, n: int, cores: int) -> int:
    need = max(1, -(-n // cores))
    if oversub is None:
        return need
    oversub = check_int(oversub, "--oversub")
    if oversub * cores < n:
        raise InputError(
            "--oversub",
            f"{oversub} slots per core give {oversub * cores} slots for {n} tasks",
            f"at least {need}",
        )
    return oversub


def treematch(
    matrix,
    tree: TreeTopology,
    *,
    oversub: int | None = None,
    decompose: bool = True,
) -> TreeMatchResult:
    """Map ``n`` tasks onto the leaves of ``tree`` by their affinity (TreeMatch).

    Parameters
    ----------
    matrix
        ``(n, n)`` affinity (dense or scipy sparse, ``>= 0``): bytes or messages between tasks;
        its symmetric part is used.
    tree
        The cores (leaves) and their hierarchy.
    oversub
        Slots per core; default ``ceil(n / cores)`` (1 when the tasks fit).
    decompose
        Decompose the arities before grouping (the reference's default).

    Returns
    -------
    TreeMatchResult
        With balanced counts: every core gets ``floor(n / cores)`` or ``ceil(n / cores)``
        tasks when oversubscribed, at most one otherwise.
    """
    started = time.perf_counter()
    w = symmetric_affinity(matrix)
    n = w.shape[0]
    if n == 0:
        raise InputError("matrix", "has no tasks", "at least one row")
    r = _check_oversub(oversub, n, tree.leaves)
    position, heuristics = _group_tree(w, np.zeros(n, dtype=np.int64), 1, tree, r, decompose)
    return TreeMatchResult(
        core_of=tree.physical()[position],
        position=position,
        oversub=r,
        seconds=time.perf_counter() - started,
        heuristics=heuristics,
    )


def group_balanced(matrix, n_groups: int, *, decompose: bool = True) -> np.ndarray:
    """Split the tasks into ``n_groups`` groups of balanced size by affinity (no layout).

    TreeMatch's oversubscribed grouping on a one-level tree of ``n_groups`` leaves, stopped
    before laying the groups out (a flat level has no layout to choose): every group gets
    ``floor`` or ``ceil(n / n_groups)`` tasks. TreeMatchLB's level 1 uses it for node groups.

    Returns
    -------
    numpy.ndarray
        int64 ``(n,)``: group of each task.
    """
    w = symmetric_affinity(matrix)
    n = w.shape[0]
    check_int(n_groups, "n_groups")
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    r = max(1, -(-n // int(n_groups)))
    tree = TreeTopology((int(n_groups),), (1.0,))
    group, _ = _group_tree(w, np.zeros(n, dtype=np.int64), 1, tree, r, decompose, True)
    return group


def treematch_nodes(
    matrix, node_of: np.ndarray, nodes: int, tree: TreeTopology, *, decompose: bool = True
) -> np.ndarray:
    """TreeMatch on every node at once: each node's tasks onto that node's tree.

    The tasks of different nodes never share a group (only the affinity inside a node is
    used), so the result is the per-node TreeMatch of TreeMatchLB's worker algorithm, computed
    in one pass over all nodes (block-safe heuristics only: heavy-edge matching and growth).
    Each node's cores get ``floor`` or ``ceil`` of its tasks / cores.

    Parameters
    ----------
    matrix
        ``(n, n)`` affinity of all tasks.
    node_of
        int ``(n,)``: node of each task, in ``[0, nodes)``.
    nodes
        Number of nodes.
    tree
        The tree of one node.

    Returns
    -------
    numpy.ndarray
        int64 ``(n,)``: physical core (within its node) of each task.
    """
    w = symmetric_affinity(matrix)
    node_of = np.asarray(node_of, dtype=np.int64)
    n = w.shape[0]
    if node_of.shape != (n,) or (n and (node_of.min() < 0 or node_of.max() >= nodes)):
        raise InputError(
            "node_of", f"has shape {node_of.shape} or nodes out of range", f"({n},) in [0, {nodes})"
        )
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    counts = np.bincount(node_of, minlength=nodes)
    r = max(1, int(-(-counts.max() // tree.leaves)))
    position, _ = _group_tree(w, node_of, nodes, tree, r, decompose)
    return tree.physical()[position]


def _group_tree(
    w: sp.csr_array,
    block_of: np.ndarray,
    blocks: int,
    tree: TreeTopology,
    r: int,
    decompose: bool,
    groups_only: bool = False,
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Bottom-up grouping then top-down layout; leaf position (in its block) of every task.

    With ``groups_only`` it stops after the per-core groups (balanced, ids ``0 .. cores-1``
    per block, not laid out on the tree).

    Tasks of block ``b`` go to the leaves of block ``b``'s copy of ``tree``; items are laid out
    block by block, each block padded with virtual tasks to ``cores * r`` slots.
    """
    n = w.shape[0]
    cores = tree.leaves
    per_block = cores * r
    # Padded index of every task: block-contiguous, the real tasks first in each block.
    order, ptr = group_order(block_of, blocks)
    starts = ptr[:-1]
    rank_in_block = np.empty(n, dtype=np.int64)
    rank_in_block[order] = np.arange(n) - starts[block_of[order]]
    index = block_of * per_block + rank_in_block
    heuristics: list[str] = []
    if blocks > 1:
        # Only the affinity inside each block, renumbered block by block.
        w = _block_diagonal(w, block_of)
    if r > 1 or blocks > 1:
        cur = _relabel(w, index, blocks * per_block) if blocks > 1 else _pad(w, per_block)
        label = index.copy()
        if r > 1:
            slots = TreeTopology((r,), (0.0,))
            slot_arities = list(reversed(slots.decomposed() if decompose else (r,)))
            for level, k in enumerate(slot_arities):
                groups, how = group_level(cur, k, blocks)
                heuristics.append(how)
                node_label = np.empty(cur.shape[0], dtype=np.int64)
                node_label[groups.ravel()] = np.repeat(np.arange(len(groups)), k)
                label = node_label[label]
                if level < len(slot_arities) - 1:  # the last one is rebuilt from w below
                    cur = aggregate(cur, node_label, len(groups), groups.ravel())
            task_group = _balance(
                label.copy(),
                block_of,
                blocks,
                cores,
                *csr_arrays(w),
            )
            if groups_only and REFINE_PASSES:
                # Flat groups (TreeMatchLB's nodes) are judged by their cut alone: refine it.
                # Under a tree it did not pay (hop-bytes rose on CommBench), so not there.
                task_group = refine_groups(w, task_group, block_of, blocks, cores)
            if groups_only:
                return task_group, tuple(heuristics)
            cur = aggregate(w, task_group, blocks * cores)
        else:
            task_group = label
    else:
        cur = _pad(w, cores)
        task_group = np.arange(n, dtype=np.int64)
    if groups_only:
        return task_group, tuple(heuristics)
    recorded: list[np.ndarray] = []
    arities = tree.decomposed() if decompose else tree.arities
    for level, k in enumerate(reversed(arities)):
        groups, how = group_level(cur, k, blocks)
        heuristics.append(how)
        recorded.append(groups)
        if level < len(arities) - 1:  # the root level's aggregate is never used
            node_label = np.empty(cur.shape[0], dtype=np.int64)
            node_label[groups.ravel()] = np.repeat(np.arange(len(groups)), k)
            cur = aggregate(cur, node_label, len(groups), groups.ravel())
    # Block-safe groups come out block by block: the last level's group b is block b.
    layout = np.arange(blocks, dtype=np.int64)
    for groups in reversed(recorded):
        layout = groups[layout].ravel()
    position_of_group = np.empty(blocks * cores, dtype=np.int64)
    position_of_group[layout] = np.arange(blocks * cores) % cores
    return position_of_group[task_group], tuple(heuristics)


@njit(cache=True)
def _relabel_csr(indptr, indices, data, index, size):
    """CSR of the matrix with row and column ``t`` renamed ``index[t]`` (rows reordered)."""
    n = indptr.shape[0] - 1
    ptr = np.zeros(size + 1, dtype=np.int64)
    for t in range(n):
        ptr[index[t] + 1] = indptr[t + 1] - indptr[t]
    for i in range(size):
        ptr[i + 1] += ptr[i]
    out_idx = np.empty(indices.shape[0], dtype=np.int32)
    out_val = np.empty(indices.shape[0])
    for t in range(n):
        o = ptr[index[t]]
        for e in range(indptr[t], indptr[t + 1]):
            out_idx[o] = index[indices[e]]
            out_val[o] = data[e]
            o += 1
    return ptr, out_idx, out_val


@njit(cache=True)
def _filter_blocks(indptr, indices, data, block_of):
    """CSR keeping the entries whose two ends share a block."""
    n = indptr.shape[0] - 1
    ptr = np.zeros(n + 1, dtype=np.int64)
    out_idx = np.empty(indices.shape[0], dtype=np.int32)
    out_val = np.empty(indices.shape[0])
    k = 0
    for t in range(n):
        b = block_of[t]
        for e in range(indptr[t], indptr[t + 1]):
            if block_of[indices[e]] == b:
                out_idx[k] = indices[e]
                out_val[k] = data[e]
                k += 1
        ptr[t + 1] = k
    return ptr, out_idx[:k].copy(), out_val[:k].copy()


def _block_diagonal(w: sp.csr_array, block_of: np.ndarray) -> sp.csr_array:
    ptr, idx, val = _filter_blocks(
        *csr_arrays(w),
        block_of,
    )
    return sp.csr_array((val, idx, ptr), shape=w.shape)


def _relabel(w: sp.csr_array, index: np.ndarray, size: int) -> sp.csr_array:
    """``w`` with task ``t`` renamed ``index[t]`` in a ``size``-item matrix (virtual rest)."""
    ptr, idx, val = _relabel_csr(
        *csr_arrays(w),
        index,
        size,
    )
    return sp.csr_array((val, idx, ptr), shape=(size, size))


def _pad(w: sp.csr_array, size: int) -> sp.csr_array:
    """``w`` with virtual tasks (empty rows) up to ``size`` items."""
    n = w.shape[0]
    if n == size:
        return w
    indptr = np.concatenate([w.indptr, np.full(size - n, w.indptr[-1])])
    return sp.csr_array((w.data, w.indices, indptr), shape=(size, size))


# --- costs ---------------------------------------------------------------------------------------


def mapping_cost(matrix, tree: TreeTopology, core_of: np.ndarray) -> dict[str, float]:
    """SUM_COM, MAX_COM and hop-bytes of a mapping (spec §1), right for any arity list.

    Parameters
    ----------
    matrix
        ``(n, n)`` affinity; its symmetric part ``S`` is charged over pairs ``i < j``.
    tree
        The tree mapped on (not oversubscribed: tasks on one core cost 0).
    core_of
        Physical leaf id of each task, ``(n,)``.

    Returns
    -------
    dict
        ``sum_com = Σ S_ij c[d_ij]``, ``max_com = max S_ij c[d_ij]`` (``c`` the cumulated
        level costs, ``d_ij`` the depth where the two meet) and
        ``hop_bytes = Σ S_ij · 2 (L - d_ij)``.
    """
    w = symmetric_affinity(matrix)
    core_of = np.asarray(core_of, dtype=np.int64)
    if core_of.shape != (w.shape[0],):
        raise InputError("core_of", f"has shape {core_of.shape}", f"({w.shape[0]},)")
    if len(core_of) and (core_of.min() < 0 or core_of.max() >= tree.leaves):
        raise InputError("core_of", "has cores out of range", f"[0, {tree.leaves})")
    upper = sp.triu(w, k=1, format="coo")
    pos = tree.position()[core_of]
    depth = tree.meet_depth(pos[upper.row], pos[upper.col])
    cost = tree.cumulative_costs()[depth] * upper.data
    hops = 2 * (tree.depth - depth)
    return {
        "hop_bytes": float((upper.data * hops).sum()),
        "sum_com": float(cost.sum()),
        "max_com": float(cost.max()) if len(cost) else 0.0,
    }


def warm_up() -> None:
    """Load the compiled kernels (numba's cache) so a timed call measures the mapping alone.

    Runs TreeMatch on a small oversubscribed problem that goes through every heuristic.
    """
    rng = np.random.default_rng(0)
    n = 400
    rows = rng.integers(0, n, size=4 * n)
    cols = rng.integers(0, n, size=4 * n)
    a = sp.csr_array((rng.uniform(1, 2, size=4 * n), (rows, cols)), shape=(n, n))
    treematch(a, TreeTopology((2, 7, 2), (10.0, 5.0, 1.0)), oversub=15)
    treematch(a[:50, :50], TreeTopology((5, 10), (2.0, 1.0)))
