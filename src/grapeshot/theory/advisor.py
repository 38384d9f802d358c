"""How many partitions per node keep the expected load imbalance under a target.

Birdshot's advice (§5.3) is to read ``s`` off eq. 2. Eq. 2 is asymptotic, so this module answers
with the *exact* expectation instead, and shows eq. 2's answer beside it.

The exact ``E[LIF]`` is not monotone in ``s``: the lattice of possible busy counts makes it
wobble (a node cannot hold 2.5 busy partitions). "Smallest ``s``" therefore means what it says:
the advisor gallops ``s = 1, 2, 4, ...`` until one meets the target, then evaluates *every*
smaller ``s`` in ascending blocks and returns the first that meets it.

That scan has a budget, estimated before it starts. The binomial scan beyond
:data:`ADVISE_WALK_LIMIT` bisects between the gallop's last two points instead (exact values
at ``log2 s`` points; the answer is the smallest ``s`` only if ``E[LIF]`` decreases with ``s``
there, as it did in every binomial scan we ran) and says so (``Advice.search``). The
fixed-count scan beyond :data:`ADVISE_FIXED_COUNT_LIMIT` is refused, naming the limit and the
binomial model's answer.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.theory import binomial_scalar
from grapeshot.theory.lif import (
    BudgetExceeded,
    Model,
    WorkBudget,
    _check_busy,
    _check_count,
    _check_model,
    _check_nodes,
    exact_lif,
)

#: Largest partitions per node the advisor searches (2**20); beyond it the target is refused.
MAX_PARTS_PER_NODE = 1 << 20
#: ``s`` values evaluated per call of the exact kernel while scanning.
_BLOCK = 4096
#: Budget of the binomial scan, in values of ``k`` its walks visit (:func:`scan_walk`, before
#: the scan starts; ~10 ns each compiled, so about 6 s). Beyond it the advisor bisects.
ADVISE_WALK_LIMIT = 6e8
#: Budget of the fixed-count gallop and scan together, in the exact route's units (what
#: :func:`grapeshot.theory.lif.exact_lif` charges per ``s``; ~15 ns each, so about 8 s).
#: Beyond it the target is refused.
ADVISE_FIXED_COUNT_LIMIT = 5e8


@dataclass(frozen=True)
class Advice:
    """The advisor's answer.

    Attributes
    ----------
    parts_per_node
        Smallest ``s`` whose exact ``E[LIF]`` meets the target.
    parts_per_core
        With ``cores_per_node = C``: the smallest ``k`` such that ``s = k C`` meets the target
        (partitions per core); ``None`` when no core count was given.
    mean_exact
        Exact ``E[LIF]`` at ``parts_per_node``.
    parts_per_node_eq2
        Eq. 2's answer, ``ceil(2 ln(n) (1/p - 1) / L^2)`` (at least 1).
    mean_exact_per_core
        Exact ``E[LIF]`` at ``s = parts_per_core * cores_per_node`` (``None`` without cores).
    search
        ``"scan"`` (every smaller ``s`` checked: the smallest for certain) or ``"bisection"``
        (the scan was beyond :data:`ADVISE_WALK_LIMIT`: smallest if ``E[LIF]`` decreases
        with ``s``).
    """

    parts_per_node: int
    parts_per_core: int | None
    mean_exact: float
    parts_per_node_eq2: int
    mean_exact_per_core: float | None = None
    search: str = "scan"


def parts_per_node_eq2(nodes: int, busy: float, target_lif: float) -> int:
    """Eq. 2 solved for ``s``: ``ceil(2 ln(n) (1/p - 1) / L^2)``, at least 1.

    ``n == 1`` or ``p == 1`` give 1 (eq. 2 is 0 there for every ``s``).
    """
    n = _check_nodes(nodes)
    p = _check_busy(busy)
    need = 2.0 * math.log(n) * (1.0 / p - 1.0)
    if need == 0.0:
        return 1
    if target_lif <= 0.0:
        raise InputError("--target-lif", f"got {target_lif!r}", "a number > 0")
    return max(1, math.ceil(need / target_lif**2))


def scan_walk(nodes: int, busy: float, step: int, k_hi: int) -> float:
    """Estimated values of ``k`` the binomial scan of ``s = step, 2 step, .. (k_hi - 1) step``
    visits: each ``s`` one walk of about ``3 sqrt(2 ln(n / CUT))`` standard deviations."""
    z = math.sqrt(2.0 * (math.log(nodes) - math.log(binomial_scalar.CUT)))
    sigma = np.sqrt(np.arange(1, k_hi, dtype=float) * step * busy * (1.0 - busy))
    return float(np.sum(3.0 * z * sigma + 16.0))


def _smallest_multiple(
    nodes: int, busy: float, target: float, step: int, model: Model, budget: WorkBudget
) -> tuple[int, float, str]:
    """Smallest ``k >= 1`` with exact ``E[LIF](k * step) <= target``, that ``E[LIF]``, and the
    search that found it (``"scan"`` or ``"bisection"``).

    Raises
    ------
    BudgetExceeded
        Fixed-count, when the gallop and scan would spend more than ``budget`` allows.
    """

    def lif(ks: np.ndarray) -> np.ndarray:
        return exact_lif(nodes, ks * step, busy, model=model, budget=budget)

    # Gallop to a feasible k (an upper bound of the answer) ...
    k = 1
    gallop: list[tuple[int, float]] = []  # (k, work of its evaluation), fixed-count
    while True:
        if k * step > MAX_PARTS_PER_NODE:
            raise InputError(
                "--target-lif",
                f"{target!r} needs more than {MAX_PARTS_PER_NODE} partitions per node",
                "a larger target",
            )
        spent = budget.spent
        value = float(lif(np.array([k], dtype=np.int64))[0])
        gallop.append((k, budget.spent - spent))
        if value <= target:
            break
        k *= 2
    k_hi, value_hi = k, value
    if model == "binomial" and scan_walk(nodes, busy, step, k_hi) > ADVISE_WALK_LIMIT:
        # Beyond the budget: bisect between the gallop's last miss and its hit.
        lo, hi = k_hi // 2, k_hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            value = float(lif(np.array([mid], dtype=np.int64))[0])
            if value <= target:
                hi, value_hi = mid, value
            else:
                lo = mid
        return hi, value_hi, "bisection"
    if model == "fixed-count":
        # The k of [g, 2 g) cost between what g and 2 g did: what the scan would spend.
        ahead = sum(g * (w + w2) / 2 for (g, w), (_, w2) in itertools.pairwise(gallop))
        if budget.spent + ahead > budget.limit:
            raise BudgetExceeded(budget.spent + ahead)
    # ... then look at every smaller k: E[LIF] wobbles, so an earlier one may meet it too.
    # Fixed-count evaluates one s at a time anyway: small blocks stop soon after the answer.
    block = _BLOCK if model == "binomial" else 16
    for start in range(1, k_hi, block):
        ks = np.arange(start, min(start + block, k_hi), dtype=np.int64)
        values = lif(ks)
        hits = np.flatnonzero(values <= target)
        if hits.size:
            return int(ks[hits[0]]), float(values[hits[0]]), "scan"
    return k_hi, value_hi, "scan"


def advise(
    nodes: int,
    busy: float,
    target_lif: float,
    *,
    cores_per_node: int | None = None,
    model: Model = "binomial",
) -> Advice:
    """Smallest partitions per node (and per core) whose exact ``E[LIF]`` meets a target.

    Parameters
    ----------
    nodes
        Number of nodes ``n`` (>= 1).
    busy
        Fraction ``p`` of partitions that carry work, in ``(0, 1]``.
    target_lif
        Largest acceptable expected LIF ``L`` (0.05: the most loaded node has at most 5 % more
        busy partitions than the average, in expectation). Must be > 0, except that 0 is
        accepted when ``n == 1`` or ``p == 1``, where every placement is perfectly balanced.
    cores_per_node
        Cores per node ``C`` (>= 1): also answer in partitions per core, ``s = k C``.
    model
        ``"binomial"`` (fast at any size; beyond :data:`ADVISE_WALK_LIMIT` found by
        bisection) or ``"fixed-count"`` (exact route for each ``s`` scanned; refused with an
        InputError when a size, or the whole scan, is beyond its budget).

    Returns
    -------
    Advice

    Raises
    ------
    InputError
        On bad input, when the target needs more than :data:`MAX_PARTS_PER_NODE`, or when a
        fixed-count scan is beyond :data:`ADVISE_FIXED_COUNT_LIMIT`.
    """
    n = _check_nodes(nodes)
    p = _check_busy(busy)
    model = _check_model(model)
    try:
        target = float(target_lif)
    except (TypeError, ValueError):
        raise InputError("--target-lif", f"got {target_lif!r}", "a number > 0") from None
    if math.isnan(target) or target < 0.0:
        raise InputError("--target-lif", f"got {target_lif!r}", "a number > 0")
    cores = None
    if cores_per_node is not None:
        cores = _check_count(cores_per_node, "--cores-per-node")
    if n == 1 or p == 1.0:
        # One node, or every partition busy: LIF is 0 for every s, so one partition suffices.
        return Advice(1, None if cores is None else 1, 0.0, 1, None if cores is None else 0.0)
    if target == 0.0:
        raise InputError(
            "--target-lif",
            "got 0, but a random placement on 2+ nodes with idle partitions is never "
            "perfectly balanced in expectation",
            "a number > 0",
        )
    s_eq2 = parts_per_node_eq2(n, p, target)
    if s_eq2 > 16 * MAX_PARTS_PER_NODE:  # hopeless: do not spend minutes proving it
        raise InputError(
            "--target-lif",
            f"{target!r} needs about {s_eq2} partitions per node by eq. 2",
            f"a target met with at most {MAX_PARTS_PER_NODE} partitions per node",
        )
    budget = WorkBudget(ADVISE_FIXED_COUNT_LIMIT)
    try:
        s, mean, search = _smallest_multiple(n, p, target, 1, model, budget)
        if cores is None:
            return Advice(s, None, mean, s_eq2, search=search)
        k, mean_core, search_core = _smallest_multiple(n, p, target, cores, model, budget)
    except BudgetExceeded as over:
        binomial = advise(n, p, target, cores_per_node=cores, model="binomial")
        raise InputError(
            "--model",
            f"fixed-count needs E[LIF] exactly for every s up to the answer, about "
            f"{over.args[0]:.1e} units of work, beyond the advisor's budget of "
            f"{ADVISE_FIXED_COUNT_LIMIT:.0e} (about 8 s)",
            f"--model binomial (it answers s = {binomial.parts_per_node} here; the models agree "
            "closely once n·s is large), or fewer nodes or a larger --target-lif",
        ) from None
    searches = {search, search_core}
    return Advice(s, k, mean, s_eq2, mean_core, "bisection" if "bisection" in searches else "scan")
