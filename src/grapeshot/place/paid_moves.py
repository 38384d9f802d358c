"""When a dynamic strategy's proposal is worth its moves (``grapeshot run --lazy-moves``).

A rebalance on real ranks pauses every rank: the loads are gathered, the strategy decides,
the moved partitions travel and every rank re-plans. Where the load drifts slowly, a
proposal every few steps gains less than that pause (on the FKPP front, 16×16, 2 ranks,
``greedy-refine`` every 5 steps: 38 of 39 calls moved partitions for under 2.5 ms of
balance over their window, each pausing 8-11 ms).

:class:`MoveLedger` applies the rent-or-buy rule: every call adds up what the current
placement lost against the proposal over the window just measured (the busiest node's time
per step, current minus proposed), and the proposal's moves are made once that debt reaches
what a move costs; the debt is then cleared. So the time lost to imbalance between
moves is at most about one move's cost, and a run never pays for more moves than its
imbalance costs. Charm++'s MetaLB weighs a rebalance's predicted benefit against its cost to
the same end. A move's cost is what it added to its call's pause: the pause of the last call
that moved (from the call to the next segment's start: gathering, deciding, moving,
re-planning) less that of the last call that did not (gathering and deciding alone). The
first proposal that moves anything is made: it prices the later ones.
"""

from __future__ import annotations

import numpy as np

from grapeshot.model.placement import peak_loads


class MoveLedger:
    """The debt of the current placement against a strategy's proposals (rank 0's).

    Attributes
    ----------
    owed
        Seconds the current placement lost against the proposals since the last move.
    price
        Seconds a move costs, measured (``None`` before the first).
    deferred
        Proposals not made, so far.
    """

    def __init__(self) -> None:
        self.owed = 0.0
        self.deferred = 0
        self._moving: float | None = None
        self._still = 0.0

    @property
    def price(self) -> float | None:
        """The last moving call's pause less the last still call's (``None`` before the
        first move)."""
        return None if self._moving is None else max(0.0, self._moving - self._still)

    def worth(
        self, seconds: np.ndarray, current: np.ndarray, proposal: np.ndarray, cores: np.ndarray
    ) -> bool:
        """Whether to make ``proposal``'s moves now (clearing the debt), given the window's
        loads in seconds (float, ``(steps, P)``), the current placement and the proposal
        (int, ``(P,)``) and each node's cores."""
        lost = peak_loads(seconds, current, cores) - peak_loads(seconds, proposal, cores)
        self.owed = max(0.0, self.owed + float(lost.sum()))
        price = self.price
        if price is None or self.owed >= price:
            self.owed = 0.0
            return True
        self.deferred += 1
        return False

    def paused(self, seconds: float, moved: bool) -> None:
        """The last call paused the run ``seconds`` (measured), having ``moved`` partitions
        or not: the price of a move is the first less the second, the latest of each."""
        if moved:
            self._moving = float(seconds)
        else:
            self._still = float(seconds)
