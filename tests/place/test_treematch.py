"""TreeMatch: bottom-up grouping, balanced oversubscription, costs against slow references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from grapeshot.apps.commbench import commbench_matrix
from grapeshot.model.errors import InputError
from grapeshot.model.presets import preset
from grapeshot.model.topology import TreeTopology, node_topology, parse_tleaf
from grapeshot.place.treematch import (
    _exhaustive,
    group_level,
    mapping_cost,
    symmetric_affinity,
    treematch,
    treematch_nodes,
)


def stencil2d(nx: int, ny: int) -> sp.csr_array:
    idx = np.arange(nx * ny).reshape(nx, ny)
    r = np.concatenate([idx[:-1].ravel(), idx[:, :-1].ravel()])
    c = np.concatenate([idx[1:].ravel(), idx[:, 1:].ravel()])
    a = sp.coo_array((np.ones(len(r)), (r, c)), shape=(nx * ny, nx * ny))
    return (a + a.T).tocsr()


def slow_cost(a: np.ndarray, tree: TreeTopology, core_of: np.ndarray) -> dict[str, float]:
    """Pairs i < j of the symmetric part, LCA found by walking the tree from the root."""
    s = (a + a.T) / 2
    pos = tree.position()[core_of]
    costs = tree.cumulative_costs()
    total = hops = top = 0.0
    for i, j in itertools.combinations(range(len(core_of)), 2):
        if s[i, j] == 0:
            continue
        depth, span = 0, tree.leaves
        for d, arity in enumerate(tree.arities):
            span //= arity
            if pos[i] // span != pos[j] // span:
                break
            depth = d + 1
        total += s[i, j] * costs[depth]
        top = max(top, s[i, j] * costs[depth])
        hops += s[i, j] * 2 * (tree.depth - depth)
    return {"hop_bytes": hops, "sum_com": total, "max_com": top}


@pytest.mark.parametrize("tleaf", ["tleaf 3 2 100 4 10 8 1", "tleaf 2 3 7 5 2", "tleaf 1 9 4"])
def test_costs_match_a_slow_reference(tleaf: str) -> None:
    rng = np.random.default_rng(1)
    tree = parse_tleaf(tleaf)
    n = min(tree.leaves, 30)
    a = rng.integers(0, 5, size=(n, n)).astype(float) * (rng.random((n, n)) < 0.3)
    core_of = rng.permutation(tree.leaves)[:n]
    got = mapping_cost(a, tree, core_of)
    want = slow_cost(a, tree, core_of)
    for key in want:
        assert got[key] == pytest.approx(want[key])


def test_cost_with_shared_cores_is_zero_for_that_pair() -> None:
    tree = parse_tleaf("tleaf 2 2 10 2 1")
    a = np.array([[0, 5.0], [5.0, 0]])
    assert mapping_cost(a, tree, np.array([3, 3]))["sum_com"] == 0.0
    assert mapping_cost(a, tree, np.array([0, 3]))["sum_com"] == 5 * 11


def test_exhaustive_grouping_is_optimal() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        m, k = 6, 2
        w = rng.random((m, m))
        w = np.triu(w, 1) + np.triu(w, 1).T
        groups = _exhaustive(w, k)
        inside = sum(w[np.ix_(g, g)].sum() for g in groups)
        best = 0.0
        for perm in itertools.permutations(range(m)):
            gs = np.asarray(perm).reshape(-1, k)
            best = max(best, sum(w[np.ix_(g, g)].sum() for g in gs))
        assert inside == pytest.approx(best)


@pytest.mark.parametrize(
    ("m", "k", "blocks", "heuristic"),
    [
        (8, 2, 1, "exhaustive"),
        (40, 2, 1, "enumerate"),
        (600, 2, 1, "matching"),
        (600, 3, 1, "growth"),
        (60, 3, 1, "growth"),
        (64, 2, 4, "matching"),
        (60, 3, 2, "growth"),
    ],
)
def test_group_level_heuristic_by_candidates_and_valid_groups(m, k, blocks, heuristic) -> None:
    rng = np.random.default_rng(m)
    a = sp.random_array((m, m), density=0.1, rng=rng)
    if blocks > 1:  # no affinity between blocks
        size = m // blocks
        mask = (np.arange(m)[:, None] // size) == (np.arange(m)[None, :] // size)
        a = sp.csr_array(a.toarray() * mask)
    w = symmetric_affinity(a)
    groups, how = group_level(w, k, blocks)
    assert how == heuristic
    assert groups.shape == (m // k, k)
    assert sorted(groups.ravel().tolist()) == list(range(m))
    if blocks > 1:
        size = m // blocks
        assert (groups // size == (groups[:, :1] // size)).all()
        # Block by block, in order.
        assert np.all(np.diff(groups[:, 0] // size) >= 0)


@pytest.mark.parametrize(
    ("n", "tleaf"), [(64, "tleaf 2 8 10 8 1"), (1024, "tleaf 3 64 1000 2 100 8 10")]
)
def test_treematch_beats_packed_on_stencils(n: int, tleaf: str) -> None:
    a = stencil2d(int(np.sqrt(n)), int(np.sqrt(n)))
    tree = parse_tleaf(tleaf)
    result = treematch(a, tree)
    assert sorted(result.core_of.tolist()) == list(range(tree.leaves))
    ours = mapping_cost(a, tree, result.core_of)["sum_com"]
    packed = mapping_cost(a, tree, np.arange(n))["sum_com"]
    assert ours <= packed
    if n == 1024:
        assert ours < 0.6 * packed


@pytest.mark.parametrize(
    ("n", "cores", "oversub"),
    [(100, 32, None), (128, 32, None), (100, 32, 8), (33, 32, None), (5, 32, None), (1, 4, None)],
)
def test_oversubscription_gives_balanced_counts(n: int, cores: int, oversub) -> None:
    tree = TreeTopology((2, cores // 2), (10.0, 1.0)) if cores > 4 else TreeTopology((4,), (1.0,))
    a = commbench_matrix(max(n, 3), seed=n)[:n, :n]
    result = treematch(a, tree, oversub=oversub)
    counts = np.bincount(result.core_of, minlength=tree.leaves)
    assert counts.sum() == n
    assert counts.max() - counts.min() <= 1
    assert counts.max() <= result.oversub


def test_oversub_too_small_is_refused() -> None:
    with pytest.raises(InputError) as info:
        treematch(np.ones((10, 10)), TreeTopology((4,), (1.0,)), oversub=2)
    assert info.value.where == "--oversub"


@pytest.mark.parametrize(
    "bad",
    [
        np.ones((3, 4)),
        -np.ones((3, 3)),
        np.full((2, 2), np.nan),
        np.ones(3),
        np.zeros((0, 0)),
        [["a"]],
    ],
)
def test_bad_matrices_are_refused(bad) -> None:
    with pytest.raises(InputError):
        treematch(bad, TreeTopology((4,), (1.0,)))


def test_deterministic_and_independent_of_the_input_format() -> None:
    a = commbench_matrix(300, seed=2)
    tree = node_topology(preset("bluewaters-xe6").node)
    first = treematch(a, tree).core_of
    assert np.array_equal(first, treematch(a.toarray(), tree).core_of)
    assert np.array_equal(first, treematch(sp.csc_matrix(a), tree).core_of)
    assert np.array_equal(first, treematch(a.T, tree).core_of)  # symmetric part


def test_physical_numbering_is_reported() -> None:
    # Two pairs of heavy talkers on PlaFRIM's 8 cores: each pair on one socket.
    a = np.zeros((4, 4))
    a[0, 1] = a[1, 0] = a[2, 3] = a[3, 2] = 10.0
    tree = node_topology(preset("plafrim").node)
    core = treematch(a, tree).core_of
    socket = tree.position()[core] // 4
    assert socket[0] == socket[1] and socket[2] == socket[3]


def test_treematch_nodes_keeps_nodes_apart_and_balances_each() -> None:
    tree = node_topology(preset("plafrim").node)
    blocks = [commbench_matrix(n, seed=n) for n in (20, 35, 8)]
    a = sp.block_diag(blocks, format="csr")
    node_of = np.repeat([0, 1, 2], [20, 35, 8])
    core = treematch_nodes(a, node_of, 3, tree)
    for v, n in enumerate((20, 35, 8)):
        counts = np.bincount(core[node_of == v], minlength=8)
        assert counts.sum() == n and counts.max() - counts.min() <= 1
    # As good as TreeMatch on each node alone (same algorithm family, within 10 %).
    start = 0
    for n, block in zip((20, 35, 8), blocks, strict=True):
        alone = mapping_cost(block, tree, treematch(block, tree).core_of)["sum_com"]
        batch = mapping_cost(block, tree, core[start : start + n])["sum_com"]
        assert batch <= 1.1 * alone + 1e-9
        start += n


def test_empty_matrix_and_one_task() -> None:
    tree = TreeTopology((2, 2), (2.0, 1.0))
    assert treematch(np.zeros((1, 1)), tree).core_of.tolist() == [0]
    counts = np.bincount(treematch(np.zeros((8, 8)), tree).core_of, minlength=4)
    assert counts.tolist() == [2, 2, 2, 2]


def test_group_balanced_gives_equal_groups_of_talkers() -> None:
    from grapeshot.place.treematch import aggregate, group_balanced

    a = commbench_matrix(1000, seed=4)
    group = group_balanced(a, 16)
    counts = np.bincount(group, minlength=16)
    assert counts.sum() == 1000 and counts.max() - counts.min() <= 1
    w = symmetric_affinity(a)
    cut = aggregate(w, group, 16).sum() / w.sum()
    assert cut < 0.85  # a random split of 16 cuts 15/16 = 94 %


def test_assume_symmetric_is_the_same_affinity() -> None:
    m = commbench_matrix(500, seed=6)
    s = (m + m.T).tocsr().astype(float)
    s.setdiag(3.0)
    fast = symmetric_affinity(s, assume_symmetric=True)
    slow = symmetric_affinity(s)
    assert abs(fast - slow).sum() == 0 and fast.diagonal().sum() == 0
    with pytest.raises(InputError):
        symmetric_affinity(-s, assume_symmetric=True)


def _random_graph(n: int, seed: int, distinct: bool = True) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(0, n, 4 * n), rng.integers(0, n, 4 * n)
    vals = rng.permutation(4 * n) + 1.0 if distinct else rng.integers(1, 4, 4 * n) * 1.0
    a = sp.coo_array((vals, (rows, cols)), shape=(n, n)).tocsr()
    return symmetric_affinity(sp.csr_array(np.maximum(a.toarray(), a.toarray().T)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matching_is_the_greedy_matching_by_weight(seed: int) -> None:
    """Distinct weights: the locally dominant matching = pairs taken heaviest edge first."""
    from grapeshot.place.treematch import _matching

    w = _random_graph(300, seed)
    coo = sp.triu(w, k=1).tocoo()
    mate = np.full(300, -1)
    for e in np.argsort(-coo.data, kind="stable"):
        i, j = coo.row[e], coo.col[e]
        if mate[i] < 0 and mate[j] < 0:
            mate[i], mate[j] = j, i
    got = _matching(w)
    assert sorted(got.ravel().tolist()) == list(range(300))  # a partition into pairs
    paired = {tuple(sorted(p)) for p in got.tolist()}
    want = {(min(i, j), max(i, j)) for i, j in enumerate(mate) if j >= 0}
    assert want <= paired  # every greedy pair is found; the rest pair up leftovers


@pytest.mark.parametrize("distinct", [True, False])
def test_aggregate_and_group_order_match_the_dense_definition(distinct: bool) -> None:
    from grapeshot.place.treematch import aggregate, group_order
    from grapeshot.place.treematch_lb import group_affinity

    w = _random_graph(200, 3, distinct)
    label = np.random.default_rng(5).integers(0, 13, 200)
    order, ptr = group_order(label, 13)
    assert order.tolist() == np.argsort(label, kind="stable").tolist()
    assert ptr.tolist() == [0, *np.cumsum(np.bincount(label, minlength=13)).tolist()]
    onehot = np.zeros((200, 13))
    onehot[np.arange(200), label] = 1
    dense = onehot.T @ w.toarray() @ onehot
    np.fill_diagonal(dense, 0)
    np.testing.assert_allclose(aggregate(w, label, 13).toarray(), dense)
    # Items listed in another order inside their groups (as growth does): the other kernel.
    backwards = np.lexsort((-np.arange(200), label))
    np.testing.assert_allclose(aggregate(w, label, 13, backwards).toarray(), dense)
    np.testing.assert_allclose(group_affinity(w, label, 13).toarray(), dense)
    # The dense path sums every entry in the same order: bit-identical values.
    assert (aggregate(w, label, 13).toarray() == group_affinity(w, label, 13).toarray()).all()


def test_balance_skips_balanced_groups_and_fixes_overfull_ones() -> None:
    from grapeshot.place.treematch import _balance

    w = _random_graph(64, 7)
    ptr, idx = w.indptr.astype(np.int64), w.indices.astype(np.int32)
    block = np.zeros(64, dtype=np.int64)
    even = np.arange(64) % 8
    assert _balance(even.copy(), block, 1, 8, ptr, idx, w.data).tolist() == even.tolist()
    skewed = np.minimum(np.arange(64) // 4, 7)  # group 7 holds 36 tasks
    out = _balance(skewed.copy(), block, 1, 8, ptr, idx, w.data)
    assert np.bincount(out, minlength=8).tolist() == [8] * 8
    assert (out[:28] == skewed[:28]).all()  # only the overfull group's tasks moved
