"""Every exchange algorithm is warmed before any is timed, so the order listed changes nothing.

No test here reads a clock: the timing code is driven by a stand-in clock that a stand-in
planner advances, with a large cost the first time an algorithm meets a pattern (what numba's
compilation, MPI's first connections and the like cost) and a small fixed one after. Timed
that way, any order of ``--algorithms`` must give the same times and the same "fastest".
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from mpi4py import MPI

from grapeshot.exchange import timing
from grapeshot.exchange.schedules import make_schedule
from grapeshot.exchange.spec import parse_spec
from tests.cli.helpers import run_cli

#: What a first use costs on the stand-in clock, and what each algorithm costs warm.
COLD = 0.050
WARM = {"ac": 0.004, "lp": 0.003, "rsn": 0.001, "rsnh": 0.002, "nbx": 0.0005, "drsn": 0.006}


class FakeClock:
    """Seconds that pass only when the code under test is charged for work."""

    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


def test_warm_then_time_warms_every_name_before_timing_any() -> None:
    events: list[tuple[str, str]] = []
    out = timing.warm_then_time(
        ["b", "a", "c"],
        lambda n: events.append(("warm", n)),
        lambda n: events.append(("time", n)) or n.upper(),
    )
    assert out == ["B", "A", "C"]
    assert events == [("warm", "b"), ("warm", "a"), ("warm", "c"),
                      ("time", "b"), ("time", "a"), ("time", "c")]  # fmt: skip


def _cold_then_warm_planner(clock: FakeClock):
    """``make_schedule`` that costs COLD the first time an algorithm meets a pattern.

    Cold is per pattern, not per algorithm: numba compiles a kernel once per array layout, so
    a warm-up on a stand-in of another layout (the old code's ``com[:2, :2]``) does not warm
    the timed call.
    """
    seen: set[tuple[str, int]] = set()

    def planner(pattern, algorithm, *, seed):
        com = getattr(pattern, "com", pattern)
        key = (algorithm, hash(np.ascontiguousarray(com).tobytes()) ^ hash(com.shape))
        clock.now += WARM[algorithm] if key in seen else COLD
        seen.add(key)
        return make_schedule(pattern, algorithm, seed=seed)

    return planner, seen


def test_simulated_exchange_ranks_the_same_in_every_order(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    planner, seen = _cold_then_warm_planner(clock)
    monkeypatch.setattr(timing, "make_schedule", planner)
    monkeypatch.setattr(timing, "DEFAULT_CLOCK", clock)
    results = {}
    for order in itertools.permutations(["ac", "lp", "rsn", "rsnh"]):
        seen.clear()  # each command starts cold, as a fresh process would
        res = run_cli(
            capsys, "exchange", "--pattern", "regular:n=8,d=3,unit=64", "--algorithms",
            ",".join(order), "--simulate", "cm5", "--json",
        )  # fmt: skip
        assert res.code == 0, res.err
        rows = {r["algorithm"]: r for r in res.json()["algorithms"]}
        assert [r["algorithm"] for r in res.json()["algorithms"]] == list(order)
        # Warm costs only: no algorithm is charged the first use, whatever its place.
        assert {a: r["schedule_seconds"] for a, r in rows.items()} == pytest.approx(
            {a: WARM[a] for a in order}
        )
        results[order] = {a: r["total_seconds"] for a, r in rows.items()}
    first = next(iter(results.values()))
    for totals in results.values():
        assert totals == pytest.approx(first)
        assert min(totals, key=totals.get) == min(first, key=first.get)


def _stub_plans(clock: FakeClock, log: list[tuple[str, str]]):
    """A plan class that moves nothing and charges ``clock`` like a real first use: COLD the
    first time an algorithm is planned or run in the process, its WARM cost after."""
    seen: set[str] = set()

    class StubPlan:
        def __init__(self, sendl, *, comm, algorithm, seed, max_chunk) -> None:
            self.algorithm = algorithm
            self.n_phases = 0
            self.tries = 0
            clock.now += WARM[algorithm] if algorithm in seen else COLD
            log.append(("plan", algorithm))

        def run(self, sends):
            clock.now += WARM[self.algorithm] if self.algorithm in seen else COLD
            seen.add(self.algorithm)
            log.append(("run", self.algorithm))
            return {}

        def free(self) -> None:
            pass

    return StubPlan


def _time_on_self(order, clock, log):
    com = np.zeros((1, 1), dtype=np.int64)
    return timing.time_exchanges_mpi(
        com, order, comm=MPI.COMM_SELF, repeat=3, seed=0, max_chunk=1 << 20, clock=clock,
        plan_factory=_stub_plans(clock, log),
    )  # fmt: skip


def test_mpi_timing_warms_every_algorithm_before_the_first_clock_read() -> None:
    order = ["nbx", "ac", "drsn"]
    log: list[tuple[str, str]] = []

    class LoggingClock(FakeClock):
        def __call__(self) -> float:
            log.append(("clock", ""))
            return super().__call__()

    _time_on_self(order, LoggingClock(), log)
    first_read = log.index(("clock", ""))
    warmed = {alg for kind, alg in log[:first_read] if kind == "run"}
    assert warmed == set(order)


def test_mpi_timing_ranks_the_same_in_every_order() -> None:
    algorithms = ["ac", "rsn", "nbx", "drsn"]
    rankings, times = set(), []
    for order in itertools.permutations(algorithms):
        rows = {r["algorithm"]: r for r in _time_on_self(list(order), FakeClock(), [])}
        totals = {a: rows[a]["total_seconds"] for a in algorithms}
        rankings.add(tuple(sorted(algorithms, key=totals.get)))
        times.append([totals[a] for a in algorithms])
        assert {a: rows[a]["schedule_seconds"] for a in algorithms} == pytest.approx(
            {a: WARM[a] for a in algorithms}
        )
    assert len(rankings) == 1
    assert np.allclose(times, times[0])


def test_real_plans_on_one_rank_are_warmed_and_checked() -> None:
    # The real ExchangePlan of every algorithm, on one rank: warmed, timed, verified.
    com = parse_spec("regular:n=2,d=1,unit=8").com[:1, :1].copy()
    rows = timing.time_exchanges_mpi(
        com, ["ac", "lp", "rsn", "rsnh", "drsn", "nbx", "alltoallv", "neighbor"],
        comm=MPI.COMM_SELF, repeat=2, seed=0, max_chunk=1 << 20,
    )  # fmt: skip
    assert [r["verified"] for r in rows] == [True] * 8
