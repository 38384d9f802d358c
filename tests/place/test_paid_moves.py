"""``--lazy-moves``: a proposal's moves are made once the current placement's losses against
the proposals have paid for the last move (rent or buy)."""

from __future__ import annotations

import numpy as np

from grapeshot.model.placement import peak_loads
from grapeshot.place.paid_moves import MoveLedger

CORES = np.array([1, 1])
CURRENT = np.array([0, 0, 1, 1])
BALANCED = np.array([0, 1, 0, 1])


def _window(steps: int, heavy: float) -> np.ndarray:
    """Partitions 0 and 1 (both on node 0 now) cost ``heavy`` s a step, 2 and 3 one."""
    return np.tile([heavy, heavy, 1.0, 1.0], (steps, 1))


def test_peak_loads_are_the_busiest_nodes_time_per_core_each_step() -> None:
    load = np.array([[3.0, 1.0, 2.0, 2.0], [0.0, 0.0, 1.0, 5.0]])
    assert peak_loads(load, CURRENT, CORES).tolist() == [4.0, 6.0]
    assert peak_loads(load, BALANCED, CORES).tolist() == [5.0, 5.0]
    assert peak_loads(load, CURRENT, np.array([2, 1])).tolist() == [4.0, 6.0]
    assert peak_loads(load, CURRENT, np.array([1, 4])).tolist() == [4.0, 1.5]


def test_the_first_move_is_made_and_prices_the_next_ones() -> None:
    ledger = MoveLedger()
    # 2 steps at 2 s a heavy partition: current peak 4 s a step, balanced 3: 1 s lost a step.
    assert ledger.worth(_window(2, 2.0), CURRENT, BALANCED, CORES)
    ledger.paused(5.0, moved=True)  # that call and its move paused the run 5 s
    # Each window now loses 2 s against the proposal: the third pays for a move.
    assert not ledger.worth(_window(2, 2.0), CURRENT, BALANCED, CORES)
    assert ledger.owed == 2.0
    assert not ledger.worth(_window(2, 2.0), CURRENT, BALANCED, CORES)
    assert ledger.worth(_window(2, 2.0), CURRENT, BALANCED, CORES)
    assert (ledger.owed, ledger.deferred) == (0.0, 2)
    # A call that moved nothing paused 1 s: a move adds 4 s (its call's pause less that).
    ledger.paused(1.0, moved=False)
    assert ledger.price == 4.0


def test_a_proposal_no_better_than_the_placement_owes_nothing() -> None:
    ledger = MoveLedger()
    ledger.paused(1.0, moved=True)
    # Balanced now: the "proposal" would unbalance it; the debt stays at zero, not below.
    assert not ledger.worth(_window(3, 1.0), BALANCED, CURRENT, CORES)
    assert ledger.owed == 0.0
    assert not ledger.worth(_window(3, 3.0), BALANCED, CURRENT, CORES)
    assert ledger.owed == 0.0
    # A call that moved nothing paused as long: a move adds nothing, and is made at once.
    ledger.paused(1.0, moved=False)
    assert ledger.price == 0.0
    assert ledger.worth(_window(1, 1.0), CURRENT, BALANCED, CORES)
