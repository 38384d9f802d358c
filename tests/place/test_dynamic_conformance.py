"""The conformance suite every dynamic strategy passes (STYLE 11), and the balancers' contracts.

Parametrised over :data:`DYNAMIC_STRATEGIES`, so an entry added there is held to the same
contract: deterministic (fresh instances, same inputs → the same proposal bit for bit),
partitions conserved (every one on a valid node, inputs untouched), shares proportional to
cores (heterogeneous nodes, where the strategy settles when its proposals are fed back), one-line
InputError on bad input, and a stated migration volume. A swap-only strategy
(birdshot-dynamic) cannot change a node's partition count and is held to the core-share
property it does have; best-of-k to the one of its choice. Each core-share check is shown to
catch a mutant that balances load per node instead of per core.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import sparse

from grapeshot.model.errors import InputError
from grapeshot.place import balancers as lb
from grapeshot.place import dynamic, rebalance
from grapeshot.place.birdshot import place_birdshot
from grapeshot.place.dynamic import DYNAMIC_STRATEGIES, make_dynamic_strategy
from grapeshot.place.greedy import greedy_rebalance
from grapeshot.place.rebalance import placement_scores
from grapeshot.place.speculative import affine_greedy

NAMES = sorted(DYNAMIC_STRATEGIES)


def grid_comm(nx: int, ny: int, nbytes: float = 1000.0) -> sparse.csr_array:
    """Symmetric 4-neighbour halo graph of an nx × ny partition grid."""
    ids = np.arange(nx * ny).reshape(nx, ny)
    a = np.concatenate([ids[:-1].ravel(), ids[:, :-1].ravel()])
    b = np.concatenate([ids[1:].ravel(), ids[:, 1:].ravel()])
    m = sparse.csr_array((np.full(a.size, nbytes), (a, b)), shape=(nx * ny, nx * ny))
    return (m + m.T).tocsr()


def skewed_case(seed: int = 3, parts=(12, 10), cores=(4, 4, 2, 6)):
    """A geometric-like start with all the load on the first nodes' partitions."""
    rng = np.random.default_rng(seed)
    n_parts = int(np.prod(parts))
    cores = np.asarray(cores, dtype=np.int64)
    node_of = np.repeat(
        np.arange(cores.size), np.diff(np.linspace(0, n_parts, cores.size + 1).astype(int))
    )
    steps = 6
    loads = rng.uniform(0.0, 1.0, (steps, n_parts))
    loads[:, : n_parts // 3] *= 8.0
    return loads, node_of.astype(np.int64), cores, grid_comm(*parts)


def make(name: str):
    """A fresh strategy with a short interval, bound to a forecast where it needs one."""
    keys = {"interval": 2} if name not in ("birdshot-best-of-k",) else {"score_steps": 6}
    if name == "birdshot-dynamic":
        keys["min_interval"] = 0
    strategy = make_dynamic_strategy(name, **keys)
    if getattr(strategy, "needs_shadow", False):
        loads, _, cores, _ = skewed_case()
        home = np.repeat(
            np.arange(cores.size),
            np.diff(np.linspace(0, loads.shape[1], cores.size + 1).astype(int)),
        )
        strategy = strategy.with_shadow(
            lambda s, w: np.tile(loads.mean(axis=0), (w, 1)), home, cores
        )
    return strategy


def call(strategy, loads, node_of, cores, comm, step=6):
    return strategy.rebalance(
        step=step,
        loads=loads.copy(),
        node_of=node_of.copy(),
        cores=cores.copy(),
        state_bytes=np.full(node_of.size, 100, dtype=np.int64),
        comm=comm,
        machine=None,
    )


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_for_the_same_inputs(name: str) -> None:
    loads, node_of, cores, comm = skewed_case()
    a = call(make(name), loads, node_of, cores, comm)
    b = call(make(name), loads, node_of, cores, comm)
    assert (a is None) == (b is None)
    if a is not None:
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", NAMES)
def test_conserves_partitions_and_lowers_the_worst_node(name: str) -> None:
    loads, node_of, cores, comm = skewed_case()
    before = node_of.copy()
    new = call(make(name), loads, node_of, cores, comm)
    np.testing.assert_array_equal(node_of, before)  # the input is not modified
    assert new is not None, f"{name} proposes nothing on a skewed load"
    new = np.asarray(new)
    assert new.shape == node_of.shape and np.issubdtype(new.dtype, np.integer)
    assert new.min() >= 0 and new.max() < cores.size
    mean = loads.mean(axis=0)
    assert lb.max_over_avg(mean, new, cores) < lb.max_over_avg(mean, node_of, cores)
    moved, nbytes = lb.migration_volume(node_of, new, np.full(node_of.size, 100))
    assert moved == int((new != node_of).sum()) >= 1 and nbytes == 100 * moved


#: Strategies that only swap partitions: a node's partition count is its start's forever, so
#: they are held to their own core-share property (test_swaps_keep_the_quota_...).
SWAP_ONLY = ("birdshot-dynamic",)


def fixed_point(strategy, loads, node_of, cores, comm, step=6, calls=40):
    """The placements ``strategy`` proposes when each proposal is fed back, until none.

    Strategies that move a capped number of partitions per call (reactive) reach their
    balance over several calls, as they would in a run.
    """
    placements = [node_of]
    for _ in range(calls):
        new = call(strategy, loads, placements[-1], cores, comm, step=step)
        if new is None or np.array_equal(new, placements[-1]):
            return placements
        placements.append(np.asarray(new, dtype=np.int64))
        step += int(strategy.interval)
    raise AssertionError(f"{strategy.name} still moving after {calls} calls")


def core_share_counts(name: str) -> np.ndarray:
    """Partitions per node where ``name`` settles: equal loads, all on a 1-core node beside
    a 7-core one."""
    n_parts = 64
    loads = np.ones((3, n_parts))
    cores = np.array([1, 7])
    node_of = np.zeros(n_parts, dtype=np.int64)  # all on the small node
    strategy = make(name)
    if getattr(strategy, "needs_shadow", False):
        strategy = strategy.with_shadow(lambda s, w: np.ones((w, n_parts)), node_of, cores)
    placements = fixed_point(strategy, loads, node_of, cores, grid_comm(8, 8, 0.0))
    return np.bincount(placements[-1], minlength=2)


@pytest.mark.parametrize("name", [n for n in NAMES if n not in SWAP_ONLY])
def test_respects_core_shares(name: str) -> None:
    """Equal loads on nodes of 1 and 7 cores: the balanced share is 1 : 7 per node."""
    counts = core_share_counts(name)
    assert abs(counts[1] - 56) <= 4, counts


def test_core_share_check_catches_a_reactive_balancing_per_node(monkeypatch) -> None:
    # The mutant: reactive compares node loads, not loads per core (its cores read as 1
    # each, in its moves, its trigger and its repack). It settles near 32 : 32. (A mutant of
    # the moves alone is no longer enough: the repack, per core, puts its result right.)
    real = dynamic.check_call

    def per_node(loads, node_of, cores, where):
        loads, nodes, cores = real(loads, node_of, cores, where)
        return loads, nodes, np.ones_like(cores)

    monkeypatch.setattr(dynamic, "check_call", per_node)
    assert abs(core_share_counts("reactive")[1] - 56) > 4


def test_reactive_moves_a_capped_share_per_call() -> None:
    """Reactive with a cap (``max_moves_fraction``; none by default): at most max(1, 5 % of
    P) partitions move per call, and the busiest node's load per core falls at every call
    that moves some."""
    loads, node_of, cores, comm = skewed_case()
    strategy = make_dynamic_strategy("reactive", interval=2, max_moves_fraction=0.05)
    cap = max(1, int(strategy.max_moves_fraction * node_of.size))
    placements = fixed_point(strategy, loads, node_of, cores, comm)
    assert len(placements) > 2  # it took more than one call
    mean = loads.mean(axis=0)
    for old, new in itertools.pairwise(placements):
        assert 1 <= int((old != new).sum()) <= cap
        assert lb.max_over_avg(mean, new, cores) < lb.max_over_avg(mean, old, cores)


def _swap_case(excess: float):
    """Birdshot's start on nodes of 1 and 7 cores (8 : 56 partitions); the small node's
    partitions ``excess`` heavier than the others."""
    cores = np.array([1, 7])
    node_of = place_birdshot((8, 8), cores, seed=0).astype(np.int64)
    loads = np.ones((3, node_of.size))
    loads[:, node_of == 0] *= 1.0 + excess
    return loads, node_of, cores, grid_comm(8, 8)


def swap_only_faults(name: str) -> list[str]:
    """Where a swap-only strategy breaks its core-share property (empty: nowhere).

    Swaps keep every node's partition count, so the share is its start's: Birdshot's
    quota, proportional to cores. What it balances is load per core against the balanced
    per-core load (sum of loads / sum of cores): a balanced 1 : 7 start is left alone, and
    a 1-core node whose partitions are 18 % heavier is over its 10 % threshold, so its heavy
    partitions are swapped onto the 7-core node until it is within the threshold.
    """
    faults = []
    loads, node_of, cores, comm = _swap_case(0.0)
    if np.bincount(node_of).tolist() != [8, 56]:
        faults.append(f"Birdshot's start is {np.bincount(node_of)}, not the quota")
    if call(make(name), loads, node_of, cores, comm) is not None:
        faults.append("moves partitions of a balanced 1 : 7 start")
    loads, node_of, cores, comm = _swap_case(0.18)
    strategy = make(name)
    placements = fixed_point(strategy, loads, node_of, cores, comm)
    if len(placements) == 1:
        faults.append("leaves the small node 18 % over")
    for new in placements[1:]:
        if not np.array_equal(np.bincount(new, minlength=2), np.bincount(node_of)):
            faults.append(f"changes the partition counts to {np.bincount(new)}")
    mean = loads.mean(axis=0)
    settled = lb.max_over_avg(mean, placements[-1], cores)  # the busiest per core / balanced
    if settled > 1.0 + strategy.threshold:
        faults.append(f"settles with the busiest node {settled - 1:.1%} over")
    return faults


@pytest.mark.parametrize("name", SWAP_ONLY)
def test_swaps_keep_the_quota_and_balance_load_per_core(name: str) -> None:
    assert swap_only_faults(name) == []


def test_swap_check_catches_a_swapper_balancing_per_node(monkeypatch) -> None:
    # The mutant: birdshot-dynamic's utilisation is the node's load, not its load per core
    # (its cores read as 1 each). The 7-core node then looks busiest, and it never swaps.
    real = rebalance.check_call

    def per_node(loads, node_of, cores, where):
        loads, nodes, c = real(loads, node_of, cores, where)
        return loads, nodes, np.ones_like(c)

    monkeypatch.setattr(rebalance, "check_call", per_node)
    assert swap_only_faults("birdshot-dynamic")


def best_of_k_faults(seed: int) -> list[str]:
    """Where best-of-k's proposal is not what it claims (empty: nowhere): the current
    placement or one of its ``k - 1`` Birdshot placements (each holding exactly its quota,
    8 : 56 on nodes of 1 and 7 cores), the one whose busiest node has the least load per
    core under the measured mean load."""
    rng = np.random.default_rng(seed)
    cores = np.array([1, 7])
    loads = rng.uniform(0.0, 1.0, (6, 64))
    node_of = np.zeros(64, dtype=np.int64)
    strategy = make("birdshot-best-of-k")
    new = call(strategy, loads, node_of, cores, grid_comm(8, 8))
    new = node_of if new is None else np.asarray(new)
    pool = np.vstack([node_of[None, :], strategy.candidates(64, cores)])
    mean = loads.mean(axis=0)
    per_core = [max(mean[p == k].sum() / cores[k] for k in range(cores.size)) for p in pool]
    faults = []
    if not any(np.array_equal(new, p) for p in pool):
        faults.append("proposes a placement not among its candidates")
    if np.bincount(new, minlength=2).tolist() != [8, 56]:
        faults.append(f"adopts {np.bincount(new, minlength=2)} partitions per node")
    mine = max(mean[new == k].sum() / cores[k] for k in range(cores.size))
    if mine > min(per_core):
        faults.append(f"busiest node per core {mine:.3f}, a candidate has {min(per_core):.3f}")
    return faults


@pytest.mark.parametrize("seed", range(3))
def test_best_of_k_adopts_the_least_busiest_per_core(seed: int) -> None:
    assert best_of_k_faults(seed) == []


def test_best_of_k_check_catches_scores_per_node(monkeypatch) -> None:
    # The mutant: candidates scored by their busiest node's load, not load per core. On
    # 1 + 7 cores that is always the 7-core node, so it adopts the placement that leaves the
    # 1-core node the most.
    real = rebalance.placement_scores

    def per_node(pool, load, cores):
        return real(pool, load, np.ones_like(cores))

    monkeypatch.setattr(rebalance, "placement_scores", per_node)
    assert best_of_k_faults(0)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "bad",
    ["negative", "nan", "short-node-of", "node-out-of-range", "zero-cores", "3d-loads"],
)
def test_refuses_bad_input_with_one_line(name: str, bad: str) -> None:
    loads, node_of, cores, comm = skewed_case()
    if bad == "negative":
        loads[0, 0] = -1.0
    elif bad == "nan":
        loads[1, 2] = np.nan
    elif bad == "short-node-of":
        node_of = node_of[:-1]
    elif bad == "node-out-of-range":
        node_of[0] = cores.size
    elif bad == "zero-cores":
        cores = cores.copy()
        cores[1] = 0
    elif bad == "3d-loads":
        loads = loads[None]
    with pytest.raises(InputError) as info:
        call(make(name), loads, node_of, cores, comm)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", NAMES)
def test_bad_parameters_are_refused(name: str) -> None:
    key = "k" if name == "birdshot-best-of-k" else "interval"
    with pytest.raises(InputError):
        make_dynamic_strategy(name, **{key: 0})
    with pytest.raises(InputError, match="--no-such"):
        make_dynamic_strategy(name, no_such=1)


# --- the balancers ------------------------------------------------------------------------


def _lpt_by_hand(load: np.ndarray, cores: np.ndarray) -> np.ndarray:
    """LPT as written in the spec: heaviest first (ties: lower id), onto the node of least
    load per core (ties: lower node), one object at a time."""
    level = np.zeros(cores.size)
    node_of = np.empty(load.size, dtype=np.int64)
    for p in sorted(range(load.size), key=lambda q: (-load[q], q)):
        node = int(np.argmin(level))
        node_of[p] = node
        level[node] += load[p] / cores[node]
    return node_of


@pytest.mark.parametrize("seed", range(5))
def test_greedy_lb_is_lpt_heaviest_first_onto_least_loaded(seed: int) -> None:
    rng = np.random.default_rng(seed)
    load = rng.exponential(1.0, 500)
    load[::7] = load[3]  # ties between objects: the lower id goes first
    cores = rng.integers(1, 9, 13)
    expected = _lpt_by_hand(load, cores.astype(np.float64))
    np.testing.assert_array_equal(lb.greedy_lb(load, cores), expected)
    got = greedy_rebalance(load, cores)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


def test_greedy_comm_without_comm_is_greedy() -> None:
    rng = np.random.default_rng(1)
    load = rng.exponential(1.0, 300)
    cores = np.array([2, 4, 4, 8])
    zero = sparse.csr_array((300, 300))
    np.testing.assert_array_equal(lb.greedy_comm_lb(load, cores, zero), lb.greedy_lb(load, cores))


def test_greedy_comm_cuts_fewer_bytes_than_greedy() -> None:
    load = np.ones(256)
    comm = grid_comm(16, 16, 1e6)
    cores = np.full(4, 4)
    c = sparse.triu(comm).tocoo()

    def cut_bytes(node_of):
        return float(c.data[node_of[c.row] != node_of[c.col]].sum())

    comm_aware = lb.greedy_comm_lb(load, cores, comm, alpha=1e-3, beta=1e-6)
    # GreedyCommLB takes objects by load, not along the graph: it only keeps some peers together.
    assert cut_bytes(comm_aware) < 0.8 * cut_bytes(lb.greedy_lb(load, cores))
    assert lb.max_over_avg(load, comm_aware, cores) < 1.3


@pytest.mark.parametrize("seed", range(6))
def test_refine_meets_its_threshold_with_few_moves(seed: int) -> None:
    rng = np.random.default_rng(seed)
    load = rng.exponential(1.0, 400)
    cores = np.full(8, 2)
    node_of = rng.integers(0, 8, 400)
    node_of[:120] = 0  # an overloaded node
    new = lb.refine_lb(load, node_of, cores, threshold=0.05)
    before = lb.max_over_avg(load, node_of, cores)
    after = lb.max_over_avg(load, new, cores)
    assert after < before
    moved = int((new != node_of).sum())
    assert moved < int((lb.greedy_lb(load, cores) != node_of).sum())
    # Only overloaded nodes gave objects away.
    per_core = np.bincount(node_of, load, 8) / cores
    avg = load.sum() / cores.sum()
    assert np.all(per_core[node_of[new != node_of]] > avg)


def test_refine_keeps_a_balanced_placement() -> None:
    load = np.ones(64)
    node_of = np.arange(64) % 4
    np.testing.assert_array_equal(lb.refine_lb(load, node_of, np.full(4, 1)), node_of)


def test_greedy_refine_stays_where_it_fits() -> None:
    rng = np.random.default_rng(2)
    load = rng.exponential(1.0, 300)
    cores = np.full(6, 1)
    greedy = lb.greedy_lb(load, cores)
    # From the greedy placement nothing needs to move.
    np.testing.assert_array_equal(lb.greedy_refine_lb(load, greedy, cores), greedy)
    node_of = rng.integers(0, 6, 300)
    new = lb.greedy_refine_lb(load, node_of, cores)
    assert lb.max_over_avg(load, new, cores) <= 1.0 + 2 * load.max() / (load.sum() / 6)
    assert (new != node_of).sum() < (greedy != node_of).sum()


def test_refine_comm_lowers_the_worst_node() -> None:
    load = np.ones(64)
    load[:16] = 4.0
    node_of = np.repeat(np.arange(4), 16)
    comm = grid_comm(8, 8, 1e4)
    new = lb.refine_comm_lb(load, node_of, np.full(4, 1), comm)
    assert lb.max_over_avg(load, new, np.full(4, 1)) < lb.max_over_avg(load, node_of, np.full(4, 1))


def test_affine_greedy_keeps_balanced_partitions_home() -> None:
    pred = np.ones((5, 32))
    home = np.repeat(np.arange(4), 8)
    np.testing.assert_array_equal(affine_greedy(pred, home, np.full(4, 2)), home)


def test_placement_scores_are_the_worst_node_per_core() -> None:
    load = np.array([1.0, 2.0, 3.0, 4.0])
    pool = np.array([[0, 0, 1, 1], [0, 1, 0, 1]])
    np.testing.assert_allclose(placement_scores(pool, load, np.array([1, 2])), [3.5, 4.0])


@pytest.mark.parametrize(
    "fn",
    [
        lambda: lb.greedy_lb(np.array([1.0, -1.0]), np.array([1])),
        lambda: lb.refine_lb(np.ones(3), np.array([0, 1]), np.array([1, 1])),
        lambda: lb.refine_lb(np.ones(2), np.array([0, 1]), np.array([1, 1]), threshold=-1),
        lambda: lb.greedy_refine_lb(np.ones(2), np.array([0, 1]), np.array([1, 1]), tolerance=0.5),
        lambda: lb.greedy_comm_lb(np.ones(2), np.array([1]), sparse.csr_array((3, 3))),
        lambda: lb.greedy_lb(np.ones(2), np.array([], dtype=int)),
    ],
)
def test_balancers_refuse_bad_input(fn) -> None:
    with pytest.raises(InputError):
        fn()
