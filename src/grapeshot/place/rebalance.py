"""Periodic rebalancing, Birdshot's dynamic variant (§5.3) and Birdshot best-of-k.

Strategies of the :class:`~grapeshot.place.dynamic.DynamicStrategy` protocol: every
``interval`` steps they see the loads measured since their last call and propose a new
``node_of`` (or ``None``); the simulator and the runtime enact it and charge the moved
partitions' state (:func:`~grapeshot.place.balancers.migration_volume` states it).

- :class:`Rebalance` — run one of Charm++'s balancers (:data:`BALANCERS`) on the mean load
  of the window, every ``interval`` steps (``greedy``, ``refine``, ... in the registry).
- :class:`BirdshotDynamic` — §5.3: Birdshot's random start; per-partition load and per-node
  utilisation smoothed by an exponential window; when the most utilised node is more than
  ``threshold`` over the average, swap its busiest partition with the least busy partition
  of the least utilised node, at most one swap per ``min_interval`` steps.
- :class:`BirdshotBestOfK` — beyond the paper: Birdshot's start, then after the first
  ``score_steps`` steps the best of ``k`` random Birdshot placements on the measured load
  (the current one among them) is adopted once, and the placement stays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from grapeshot.model.errors import InputError, check_int, check_number
from grapeshot.model.machine import Machine
from grapeshot.model.placement import load_imbalance
from grapeshot.place import balancers as lb
from grapeshot.place.birdshot import place_birdshot

#: Balancers a periodic strategy can run: name → ``fn(load, node_of, cores, comm, alpha, beta,
#: threshold) -> node_of``.
BALANCERS: dict[str, Callable[..., np.ndarray]] = {
    "greedy": lambda load, node_of, cores, comm, a, b, t: lb.greedy_lb(load, cores),
    "refine": lambda load, node_of, cores, comm, a, b, t: lb.refine_lb(
        load, node_of, cores, threshold=t
    ),
    "greedy-refine": lambda load, node_of, cores, comm, a, b, t: lb.greedy_refine_lb(
        load, node_of, cores, tolerance=1.0 + t
    ),
    "greedy-comm": lambda load, node_of, cores, comm, a, b, t: lb.greedy_comm_lb(
        load, cores, comm, alpha=a, beta=b
    ),
    "refine-comm": lambda load, node_of, cores, comm, a, b, t: lb.refine_comm_lb(
        load, node_of, cores, comm, threshold=t, alpha=a, beta=b
    ),
}
#: Balancers that need the halo graph.
COMM_AWARE = frozenset({"greedy-comm", "refine-comm"})


def check_call(
    loads: np.ndarray, node_of: np.ndarray, cores: np.ndarray, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate a ``rebalance`` call; return float64 ``(w, P)`` loads, int64 nodes, cores.

    Raises
    ------
    InputError
        Naming the argument: loads not ``(w >= 1, P)`` finite and >= 0, ``node_of`` not
        ``(P,)`` nodes in range, cores not >= 1.
    """
    loads = np.asarray(loads)
    if loads.ndim == 1:
        loads = loads[None, :]
    if loads.ndim != 2 or loads.shape[0] < 1 or not np.issubdtype(loads.dtype, np.number):
        raise InputError(f"{where} loads", f"has shape {loads.shape}", "(steps >= 1, P) numbers")
    loads = loads.astype(np.float64)
    if not np.all(np.isfinite(loads)) or (loads.size and loads.min() < 0):
        raise InputError(f"{where} loads", "has negative or non-finite entries", "loads >= 0")
    _, c, nodes = lb.check_loads(loads.mean(axis=0), cores, node_of)
    return loads, nodes, c.astype(np.int64)


def comm_costs(machine: Machine | None) -> tuple[float, float]:
    """``(alpha, beta)``: seconds per message and per byte (the machine's, else Charm++'s)."""
    if machine is None:
        return lb.CHARM_ALPHA, lb.CHARM_BETA
    return machine.network.latency, 1.0 / machine.network.bandwidth


def run_balancer(
    balancer: str,
    loads: np.ndarray,
    node_of: np.ndarray,
    cores: np.ndarray,
    *,
    comm: sparse.csr_array | None,
    machine: Machine | None,
    threshold: float,
) -> np.ndarray | None:
    """Run ``balancer`` on the mean of ``loads``; the new placement, or None if unchanged."""
    loads, nodes, cores = check_call(loads, node_of, cores, balancer)
    if balancer not in BALANCERS:
        raise InputError("balancer", f"got {balancer!r}", f"one of {', '.join(BALANCERS)}")
    if balancer in COMM_AWARE and comm is None:
        raise InputError(
            f"strategy {balancer!r}", "got no halo graph (comm)", "the P x P halo bytes per step"
        )
    alpha, beta = comm_costs(machine)
    new = BALANCERS[balancer](loads.mean(axis=0), nodes, cores, comm, alpha, beta, threshold)
    new = np.asarray(new, dtype=np.int64)
    return None if np.array_equal(new, nodes) else new


@dataclass(frozen=True)
class Rebalance:
    """Every ``interval`` steps, run ``balancer`` on the mean load since the last call.

    Parameters
    ----------
    balancer
        A key of :data:`BALANCERS`.
    interval
        Steps between calls (Birdshot §7.3 and [SHQL18]: 30).
    threshold
        ``refine``: the smallest tolerated excess over the average (Charm++: 0.05);
        ``refine-comm``: the same (Charm++: 0.003); ``greedy-refine``: its tolerance minus 1
        (Charm++: 0). Unused by ``greedy`` and ``greedy-comm``.
    initial
        Static strategy of the first placement.
    """

    balancer: str = "greedy"
    interval: int = 30
    threshold: float | None = None
    initial: str = "geometric"
    name: str = ""

    def __post_init__(self) -> None:
        if self.balancer not in BALANCERS:
            raise InputError("balancer", f"got {self.balancer!r}", f"one of {', '.join(BALANCERS)}")
        check_int(self.interval, f"{self.balancer} interval")
        if self.threshold is None:
            default = {"refine": 0.05, "refine-comm": 0.003}.get(self.balancer, 0.0)
            object.__setattr__(self, "threshold", default)
        check_number(self.threshold, f"{self.balancer} threshold", low=0.0)
        if not self.name:
            object.__setattr__(self, "name", self.balancer)

    def rebalance(
        self,
        *,
        step: int,
        loads: np.ndarray,
        node_of: np.ndarray,
        cores: np.ndarray,
        state_bytes: np.ndarray,
        comm: sparse.csr_array | None = None,
        machine: Machine | None = None,
    ) -> np.ndarray | None:
        """The balancer's placement for the mean measured load, or None if unchanged."""
        return run_balancer(
            self.balancer, loads, node_of, cores, comm=comm, machine=machine,
            threshold=float(self.threshold),  # type: ignore[arg-type]
        )  # fmt: skip


@dataclass
class BirdshotDynamic:
    """Birdshot's dynamic variant (§5.3): smoothed monitoring, one swap at a time.

    Parameters
    ----------
    interval
        Steps between two looks at the monitors (each look is a synchronisation point).
    threshold
        A LIF of the smoothed loads above this triggers a swap (10%): the most utilised node
        more than this fraction over the balanced utilisation ``Σ c_p / Σ cores``.
    min_interval
        Steps that must separate two swaps (the paper's 60 s, against oscillation).
    smoothing
        Weight of the newest window in the exponential averages, in (0, 1].
    initial
        Static strategy of the first placement (Birdshot's random one).

    Notes
    -----
    Per-partition CPU ``c_p`` is smoothed as ``c_p <- (1 - a) c_p + a * mean load of the
    window``; a node's utilisation is ``sum of c_p on it / cores``, which is its CPU
    utilisation up to the common window length. The swap is made only if it lowers the
    larger of the two nodes' utilisations (the busiest partition is busier than the idlest).
    """

    interval: int = 5
    threshold: float = 0.1
    min_interval: int = 30
    smoothing: float = 0.5
    initial: str = "birdshot"
    name: str = "birdshot-dynamic"
    _smoothed: np.ndarray | None = field(default=None, init=False, repr=False)
    _last_swap: int | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        check_int(self.interval, "birdshot-dynamic interval")
        check_number(self.threshold, "birdshot-dynamic threshold", low=0.0)
        check_int(self.min_interval, "birdshot-dynamic min_interval", minimum=0)
        check_number(self.smoothing, "birdshot-dynamic smoothing", low=1e-9, high=1.0)

    def rebalance(
        self,
        *,
        step: int,
        loads: np.ndarray,
        node_of: np.ndarray,
        cores: np.ndarray,
        state_bytes: np.ndarray,
        comm: sparse.csr_array | None = None,
        machine: Machine | None = None,
    ) -> np.ndarray | None:
        """Update the monitors; swap two partitions if a node is over the threshold."""
        loads, nodes, cores = check_call(loads, node_of, cores, "birdshot-dynamic")
        window = loads.mean(axis=0)
        if self._smoothed is None or self._smoothed.shape != window.shape:
            self._smoothed = window.copy()
        else:
            self._smoothed = (1.0 - self.smoothing) * self._smoothed + self.smoothing * window
        if self._last_swap is not None and step - self._last_swap < self.min_interval:
            return None
        s = self._smoothed
        node_s = np.bincount(nodes, weights=s, minlength=cores.size)
        util = node_s / cores
        hi, lo = int(np.argmax(util)), int(np.argmin(util))
        # "More than threshold over the average utilisation" is the LIF of the smoothed loads.
        if load_imbalance(node_s, cores) <= self.threshold or hi == lo:
            return None
        on_hi, on_lo = np.flatnonzero(nodes == hi), np.flatnonzero(nodes == lo)
        if on_hi.size == 0 or on_lo.size == 0:
            return None
        busy = int(on_hi[np.argmax(s[on_hi])])  # argmax/argmin: ties to the lower id
        idle = int(on_lo[np.argmin(s[on_lo])])
        delta = s[busy] - s[idle]
        after = max(util[hi] - delta / cores[hi], util[lo] + delta / cores[lo])
        if delta <= 0 or after >= util[hi]:
            return None
        new = nodes.copy()
        new[busy], new[idle] = lo, hi
        self._last_swap = step
        return new


@dataclass
class BirdshotBestOfK:
    """Birdshot's start, then the best of ``k`` random placements on the first steps' load.

    Parameters
    ----------
    k
        Random placements compared (the running one and ``k - 1`` more), >= 1.
    score_steps
        Steps measured before choosing (the single call comes after them).
    seed
        Seed of the ``k - 1`` extra placements.
    initial
        Static strategy of the first placement.

    Notes
    -----
    The score of a placement is the largest node load per core under the mean load of the
    first ``score_steps`` steps. The chosen placement is adopted once (its moved partitions
    are charged) and kept to the end: :meth:`call_steps` asks for one call only.
    """

    k: int = 16
    score_steps: int = 5
    seed: int = 0
    initial: str = "birdshot"
    name: str = "birdshot-best-of-k"

    def __post_init__(self) -> None:
        check_int(self.k, "birdshot-best-of-k k")
        check_int(self.score_steps, "birdshot-best-of-k score_steps")
        check_int(self.seed, "birdshot-best-of-k seed", minimum=0)

    @property
    def interval(self) -> int:
        """Steps before the one call."""
        return self.score_steps

    def call_steps(self, n_steps: int) -> list[int]:
        """The steps at which the strategy is called: once, after ``score_steps`` steps."""
        return [self.score_steps] if self.score_steps < n_steps else []

    def candidates(self, n_parts: int, cores: np.ndarray) -> np.ndarray:
        """``(k - 1, P)``: the extra random placements, from ``seed``."""
        seeds = np.random.SeedSequence(self.seed).spawn(max(self.k - 1, 0))
        return np.array(
            [place_birdshot((1, n_parts), cores, seed=np.random.default_rng(s)) for s in seeds],
            dtype=np.int64,
        ).reshape(-1, n_parts)

    def rebalance(
        self,
        *,
        step: int,
        loads: np.ndarray,
        node_of: np.ndarray,
        cores: np.ndarray,
        state_bytes: np.ndarray,
        comm: sparse.csr_array | None = None,
        machine: Machine | None = None,
    ) -> np.ndarray | None:
        """The best-scoring of the current and ``k - 1`` random placements (None: current)."""
        loads, nodes, cores = check_call(loads, node_of, cores, "birdshot-best-of-k")
        if step != self.score_steps:
            return None
        load = loads.mean(axis=0)
        pool = np.vstack([nodes[None, :], self.candidates(nodes.size, cores)])
        scores = placement_scores(pool, load, cores)
        best = int(np.argmin(scores))  # ties: the earlier candidate, the current one first
        return None if best == 0 else pool[best]


def placement_scores(pool: np.ndarray, load: np.ndarray, cores: np.ndarray) -> np.ndarray:
    """Largest node load per core of each placement (row) of ``pool`` under ``load``.

    Every candidate spreads the same total load over the same cores, so this ranks them as
    their :func:`~grapeshot.model.placement.load_imbalance` does, and it is in the load's unit
    (seconds: the step time the candidate would give).
    """
    pool = np.asarray(pool, dtype=np.int64)
    k, n = pool.shape[0], int(np.asarray(cores).size)
    flat = (pool + n * np.arange(k)[:, None]).ravel()
    per_node = np.bincount(flat, weights=np.tile(load, k), minlength=k * n).reshape(k, n)
    return (per_node / np.asarray(cores, dtype=np.float64)).max(axis=1)
