"""Dynamic strategies: called between steps, they may move partitions.

A dynamic strategy starts from a static placement (its ``initial`` strategy) and, every
``interval`` steps, is shown what was measured — the task seconds of every partition in each
step since its last call — and returns a new ``node_of`` or ``None`` (STYLE 4: the policy
proposes, the engine enacts). The simulator makes every call a synchronisation point: all
nodes finish the steps so far, report their loads (an allreduce), and each moved partition
then carries its state (``cells * state_bytes_per_cell`` bytes) over the network from its old
node to its new one before its next task may start there. Partitions that stay put start as
soon as their node is released.

:class:`ReactiveGreedy` is the classic reactive balancer Birdshot compares against (§5.3,
§7.3): measure, then move work from the most to the least loaded node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol, runtime_checkable

import numpy as np
from numba import njit
from scipy import sparse

from grapeshot.model.errors import InputError, check_int, check_number
from grapeshot.model.machine import Machine
from grapeshot.model.placement import balanced_load, load_imbalance
from grapeshot.place.balancers import Repack
from grapeshot.place.rebalance import (
    BALANCERS,
    BirdshotBestOfK,
    BirdshotDynamic,
    check_call,
    run_balancer,
)
from grapeshot.place.speculative import Speculative, affine_greedy
from grapeshot.place.treematch_lb import TreeMatchLB


@runtime_checkable
class DynamicStrategy(Protocol):
    """What the simulator needs from a dynamic strategy.

    Attributes
    ----------
    name
        Its name (what ``--strategy`` selects).
    initial
        The static strategy of the first placement (a key of
        :data:`grapeshot.place.STATIC_STRATEGIES`).
    interval
        Steps between calls, ``>= 1``.
    """

    name: str
    initial: str
    interval: int

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
        """Propose a placement for the steps from ``step`` on.

        Parameters
        ----------
        step
            The first step the new placement would run.
        loads
            float64, ``(steps since the last call, P)``: measured task seconds per partition.
        node_of
            int64, ``(P,)``: the current placement (a copy: the strategy may modify it).
        cores
            int64, ``(nodes,)``: cores per node.
        state_bytes
            int64, ``(P,)``: bytes moving each partition would cost.
        comm
            float64, ``(P, P)`` symmetric sparse: bytes the two partitions exchange per step
            (their halo graph), or ``None`` where the caller has none; comm-aware and
            topology-aware strategies need it.
        machine
            The machine the nodes belong to (cores, node tree, network), or ``None``.

        Returns
        -------
        numpy.ndarray or None
            The new node of every partition, or ``None`` to keep the placement.
        """
        ...


def _greedy_moves(
    load: np.ndarray, node_of: np.ndarray, cores: np.ndarray, threshold: float, max_moves: int
) -> int:
    """Pairwise moves (``node_of`` changed in place) while the LIF exceeds ``threshold``.

    Parameters
    ----------
    load
        float64, ``(P,)``: load of every partition.
    node_of
        int64, ``(P,)``: the placement, modified in place.
    cores
        float64, ``(nodes,)``: cores per node.
    threshold
        Tolerated LIF.
    max_moves
        Most partitions moved.

    Returns
    -------
    int
        The number of moves made.
    """
    node_load = np.bincount(node_of, weights=load, minlength=cores.size)
    # Moves keep the total load and the cores, so the balanced level holds for the whole call
    # and the kernel's test is load_imbalance's max / level − 1.
    level = float(balanced_load(node_load, cores))
    return int(_greedy_moves_kernel(load, node_of, cores, level, float(threshold), max_moves))


@njit(cache=True)
def _greedy_moves_kernel(load, node_of, cores, level, threshold, max_moves):
    n = cores.shape[0]
    node_load = np.zeros(n)
    for p in range(load.shape[0]):
        node_load[node_of[p]] += load[p]
    moves = 0
    while moves < max_moves:
        per_core = node_load / cores
        hi = int(np.argmax(per_core))
        lo = int(np.argmin(per_core))
        if level <= 0.0 or per_core[hi] / level - 1.0 <= threshold:
            break
        # Move the partition of the busiest node that brings the two closest together.
        target = (node_load[hi] * cores[lo] - node_load[lo] * cores[hi]) / (cores[hi] + cores[lo])
        best = -1
        best_gap = np.inf
        for p in range(load.shape[0]):
            if node_of[p] != hi or load[p] <= 0.0:
                continue
            after = max(
                (node_load[hi] - load[p]) / cores[hi], (node_load[lo] + load[p]) / cores[lo]
            )
            if after < per_core[hi] - 1e-15:
                gap = abs(load[p] - target)
                if gap < best_gap:
                    best_gap = gap
                    best = p
        if best < 0:
            break
        node_of[best] = lo
        node_load[hi] -= load[best]
        node_load[lo] += load[best]
        moves += 1
    return moves


@dataclass(frozen=True)
class ReactiveGreedy:
    """Reactive greedy balancing: move the right partition from the busiest to the idlest node.

    At each call the per-partition load is the mean task time over the steps since the last
    call. While the LIF of the node loads (:func:`~grapeshot.model.placement.load_imbalance`:
    the busiest node per core over the balanced load per core, − 1) exceeds ``threshold``,
    one partition moves from it to the least loaded node: the one whose load is closest to
    what would equalise the two, among those whose move lowers the larger of the two. When
    no such move is left (granular loads: a few heavy partitions) or the cap is reached and
    the LIF is still over ``threshold``, the call's placement is instead the
    :class:`~grapeshot.place.balancers.Repack` of the placement it was given, at
    ``1 + threshold``: so each call ends within ``threshold`` whenever GreedyLB's placement
    would. ``max_moves_fraction`` caps the partitions moved per call (none by default; a
    repack that would move more is not used).

    Parameters
    ----------
    interval
        Steps between calls (Birdshot's reactive baseline migrates every 30 steps).
    threshold
        Tolerated load above the mean, as a fraction (Birdshot's dynamic variant uses 10%).
    max_moves_fraction
        Cap on the partitions moved per call, as a fraction of all partitions (at least one
        may move); 1, the default, is no cap. A cap lets a moving front outrun the balancer
        (5 % could not bring a band crossing 16 × 16 partitions within 10 % on 2 nodes).
    initial
        Static strategy of the first placement.
    balancer
        ``"pairwise"`` (the moves above, Birdshot's description of its Reactive baseline),
        ``"affine"`` ([SHQL18]'s reactive baseline, fluid-sim-lb's ``flip-current-lb``:
        Speculative's greedy placement with a home preference, made from the most recent
        step's measured loads; the home of a partition is its node at the first call, i.e.
        the initial placement), or any balancer of
        :data:`grapeshot.place.rebalance.BALANCERS` (``greedy``, ``refine``,
        ``greedy-refine``, ``greedy-comm``, ``refine-comm``) run on the mean load.
    """

    interval: int = 30
    threshold: float = 0.1
    max_moves_fraction: float = 1.0
    initial: str = "geometric"
    name: str = "reactive"
    balancer: str = "pairwise"
    _home: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_int(self.interval, "reactive interval")
        check_number(self.threshold, "reactive threshold", low=0.0, expected="a number >= 0")
        check_number(
            self.max_moves_fraction,
            "reactive max_moves_fraction",
            low=0.0,
            high=1.0,
            low_open=True,
            expected="in (0, 1]",
        )

        if self.balancer not in ("pairwise", "affine") and self.balancer not in BALANCERS:
            raise InputError(
                "reactive balancer",
                f"got {self.balancer!r}",
                f"pairwise, affine or one of {', '.join(BALANCERS)}",
            )

    def start(self, work: np.ndarray, node_of: np.ndarray, cores: np.ndarray) -> np.ndarray:
        """The first placement, from the work counts of the initial state (``(P,)``).

        With ``balancer="affine"`` the partitions are placed as at every later call, on the
        counts a run sees before its first step (e.g. fluid cells at t = 0), homes being
        ``node_of``; the other balancers keep ``node_of``.
        """
        if self.balancer != "affine":
            return np.asarray(node_of)
        loads, nodes, cores = check_call(work, node_of, cores, "reactive")
        self._home[nodes.size] = nodes.copy()
        return affine_greedy(loads, nodes, cores)

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
        """Greedy moves on the mean measured load (see the class docstring)."""
        if self.balancer == "affine":
            loads, nodes, cores = check_call(loads, node_of, cores, "reactive")
            home = self._home.setdefault(nodes.size, nodes.copy())
            new = affine_greedy(loads[-1:], home, cores)
            return None if np.array_equal(new, nodes) else new
        if self.balancer != "pairwise":
            return run_balancer(
                self.balancer, loads, node_of, cores, comm=comm, machine=machine,
                threshold=self.threshold,
            )  # fmt: skip
        loads, node_of, cores = check_call(loads, node_of, cores, "reactive")
        load = np.ascontiguousarray(loads.mean(axis=0))
        node_load = np.bincount(node_of, weights=load, minlength=len(cores))
        # The trigger is the LIF itself: the busiest node per core against the balanced level.
        if load_imbalance(node_load, cores) <= self.threshold:
            return None
        cores_f = np.asarray(cores, dtype=np.float64)
        new = np.ascontiguousarray(node_of, dtype=np.int64).copy()
        cap = max(1, int(self.max_moves_fraction * len(new)))
        _greedy_moves(load, new, cores_f, float(self.threshold), cap)
        after = np.bincount(new, weights=load, minlength=len(cores))
        if load_imbalance(after, cores) > self.threshold:
            # The pairwise moves stalled (granular loads) or hit the cap: repack the placement
            # the call was given instead, if that reaches the threshold within the cap.
            packed = Repack(load, node_of, cores_f)(1.0 + float(self.threshold))
            if packed is not None and int((packed != node_of).sum()) <= cap:
                new = packed
        return None if np.array_equal(new, node_of) else new


def _periodic(balancer: str) -> Callable[..., DynamicStrategy]:
    """The factory of ``balancer`` run every ``interval`` steps (a :class:`Rebalance`)."""
    from grapeshot.place.rebalance import Rebalance

    def factory(**overrides) -> DynamicStrategy:
        return Rebalance(balancer=balancer, name=balancer, **overrides)

    factory.__name__ = f"periodic_{balancer.replace('-', '_')}"
    factory.__doc__ = f"{balancer} every ``interval`` steps (see Rebalance)."
    factory.__wrapped__ = Rebalance  # type: ignore[attr-defined]  # its keywords
    return factory


def call_steps(strategy: DynamicStrategy, steps: int) -> list[int]:
    """The steps before which ``strategy`` is called in a run of ``steps`` steps: every
    ``interval`` steps, or the steps it asks for itself (a ``call_steps(n_steps)`` method)."""
    calls = getattr(strategy, "call_steps", None)
    if calls is not None:
        return sorted({int(c) for c in calls(steps) if 0 < int(c) < steps})
    interval = int(strategy.interval)
    return list(range(interval, steps, interval))


#: Dynamic strategies by name: a factory taking keyword overrides (``interval``,
#: ``threshold``, ``window``, ``seed``, ...). Adding a strategy is adding an entry.
DYNAMIC_STRATEGIES: Mapping[str, Callable[..., DynamicStrategy]] = MappingProxyType(
    {
        "reactive": ReactiveGreedy,
        "greedy": _periodic("greedy"),
        "refine": _periodic("refine"),
        "greedy-refine": _periodic("greedy-refine"),
        "greedy-comm": _periodic("greedy-comm"),
        "refine-comm": _periodic("refine-comm"),
        "speculative": Speculative,
        "birdshot-dynamic": BirdshotDynamic,
        "birdshot-best-of-k": BirdshotBestOfK,
        "treematch-lb": TreeMatchLB,
    }
)


def factory_keywords(name: str) -> set[str]:
    """The keyword overrides the factory of dynamic strategy ``name`` accepts."""
    import dataclasses
    import inspect

    factory = DYNAMIC_STRATEGIES[name]
    target = getattr(factory, "__wrapped__", factory)
    if dataclasses.is_dataclass(target):
        fixed = {"name", "balancer"} if target is not factory else {"name"}
        fields = dataclasses.fields(target)
        return {f.name for f in fields if f.init and not f.metadata.get("internal")} - fixed
    params = inspect.signature(target).parameters.values()
    return {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}


def make_dynamic_strategy(name: str, **overrides) -> DynamicStrategy:
    """The dynamic strategy ``name`` with the given keyword overrides (``None`` = default).

    Raises
    ------
    InputError
        On an unknown name (listing the valid ones) or an override the strategy does not
        take (naming the option, e.g. ``--window``).
    """
    if name not in DYNAMIC_STRATEGIES:
        raise InputError(
            "--strategy",
            f"unknown dynamic strategy {name!r}",
            f"one of {', '.join(DYNAMIC_STRATEGIES)}",
        )
    given = {k: v for k, v in overrides.items() if v is not None}
    accepted = factory_keywords(name)
    for key in given:
        if key not in accepted:
            raise InputError(
                f"--{key.replace('_', '-')}",
                f"is not a parameter of strategy {name!r}",
                f"one of {', '.join('--' + a.replace('_', '-') for a in sorted(accepted))}",
            )
    return DYNAMIC_STRATEGIES[name](**given)


def get_dynamic_strategy(name: str) -> DynamicStrategy | None:
    """The dynamic strategy called ``name`` (with its defaults), or ``None`` if there is none."""
    factory = DYNAMIC_STRATEGIES.get(name)
    return None if factory is None else factory()
