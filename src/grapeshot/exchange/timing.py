"""Time several exchange algorithms fairly: every one is warmed before any is timed.

The first use of an algorithm pays costs no later use pays: numba loading or compiling its
kernels (a new specialisation for each array layout), numpy's and MPI's first calls, MPI's
connections to each peer, a DRS_N window, a neighbour collective's graph communicator. Timed
in the order given, the first algorithm listed paid them (issue 27: AC's planning measured
68.9 ms listed first and 1.6 ms listed later), so the table and its "fastest" verdict
depended on the order of ``--algorithms``. :func:`warm_then_time` runs every warm-up before
the first timed run; the simulator's and MPI's timings below both go through it.

``clock`` is a parameter (default :data:`DEFAULT_CLOCK`, :func:`time.perf_counter`, read at
each call) so that a test can drive the timing with a deterministic clock and check the
ranking without reading real time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from grapeshot.exchange.pattern import Pattern
from grapeshot.exchange.schedules import TABLE_ALGORITHMS, Schedule, make_schedule

T = TypeVar("T")
Clock = Callable[[], float]

#: The clock of the timings when none is given: seconds since an arbitrary point.
DEFAULT_CLOCK: Clock = time.perf_counter


def warm_then_time(
    names: Sequence[str], warm: Callable[[str], object], measure: Callable[[str], T]
) -> list[T]:
    """``warm(name)`` for every name, then ``measure(name)`` for every name, in order.

    Parameters
    ----------
    names
        The algorithms, in the order the results are wanted.
    warm
        Uses an algorithm once, untimed, with everything its timed use touches.
    measure
        Times an algorithm; its result is returned.

    Returns
    -------
    list
        ``measure(name)`` for each name, in the order of ``names``.
    """
    for name in names:
        warm(name)
    return [measure(name) for name in names]


def time_schedules(
    pattern: Pattern, algorithms: Sequence[str], *, seed: int, clock: Clock | None = None
) -> dict[str, tuple[Schedule | None, float]]:
    """Plan every algorithm with a schedule table on ``pattern``, each timed once warm.

    The warm-up plans the pattern itself, not a small stand-in: numba compiles one version of
    a kernel per array layout, and a stand-in of another layout (a slice, say) leaves the
    pattern's own version to be compiled inside the timed call.

    Returns
    -------
    dict
        ``algorithm -> (schedule, seconds)``; ``(None, 0.0)`` for the algorithms without a
        table (DRS_N, NBX, the collectives), whose planning is part of their protocol.
    """
    now = clock if clock is not None else DEFAULT_CLOCK

    def warm(alg: str) -> None:
        if alg in TABLE_ALGORITHMS:
            make_schedule(pattern, alg, seed=seed)

    def measure(alg: str) -> tuple[Schedule | None, float]:
        if alg not in TABLE_ALGORITHMS:
            return None, 0.0
        t0 = now()
        schedule = make_schedule(pattern, alg, seed=seed)
        return schedule, now() - t0

    return dict(zip(algorithms, warm_then_time(algorithms, warm, measure), strict=True))


def time_exchanges_mpi(
    com: np.ndarray,
    algorithms: Sequence[str],
    *,
    comm: Any,
    repeat: int,
    seed: int,
    max_chunk: int,
    clock: Clock | None = None,
    plan_factory: Callable[..., Any] | None = None,
) -> list[dict[str, Any]]:
    """Plan and run every algorithm on MPI, each warmed before any is timed (collective).

    For each algorithm, after all the warm-ups: plan it (``schedule_seconds``, the slowest
    rank's), run it once untimed and check every byte, run it ``repeat`` times back to back
    (``comm_seconds``: the median over the runs of the slowest rank's time), check the last.
    The checks sit outside the timed runs: a check between timed runs pushes the buffers out
    of cache and doubled a 64 KiB exchange's time on 4 ranks sharing 2 cores
    (docs/exchange.md).

    Parameters
    ----------
    com
        ``(n, n)`` bytes from each rank to each; ``n`` must be ``comm``'s size.
    algorithms
        Names from :data:`grapeshot.exchange.schedules.ALGORITHMS`, in the order wanted.
    comm
        The communicator (an mpi4py one: its ``allreduce`` and ``Barrier`` are used).
    repeat
        Timed runs per algorithm.
    seed
        Seed of the schedules and of the payloads.
    max_chunk
        Largest MPI message piece, bytes.
    clock
        Seconds since any fixed point; default :data:`DEFAULT_CLOCK`.
    plan_factory
        Builds a plan, ``(sendl, comm=, algorithm=, seed=, max_chunk=)``; default
        :class:`grapeshot.exchange.mpi_exchange.ExchangePlan`.

    Returns
    -------
    list of dict
        One row per algorithm, in the order of ``algorithms`` (the keys of ``grapeshot
        exchange --json``).
    """
    from mpi4py import MPI

    from grapeshot.exchange.payload import make_sends, verify_received

    if plan_factory is None:
        from grapeshot.exchange.mpi_exchange import ExchangePlan

        plan_factory = ExchangePlan
    now = clock if clock is not None else DEFAULT_CLOCK
    rank = comm.Get_rank()
    sends = make_sends(com, rank, seed)

    def plan(alg: str) -> Any:
        return plan_factory(com[rank], comm=comm, algorithm=alg, seed=seed, max_chunk=max_chunk)

    def warm(alg: str) -> None:
        # Everything the timed use touches: the planning (numba kernels, Generate_Recv's
        # collectives, a DRS_N window, a graph communicator) and a checked run.
        warm_plan = plan(alg)
        verify_received(com, rank, warm_plan.run(sends), seed)
        warm_plan.free()

    def measure(alg: str) -> dict[str, Any]:
        comm.Barrier()
        t0 = now()
        timed = plan(alg)
        sched_s = comm.allreduce(now() - t0, op=MPI.MAX)
        verify_received(com, rank, timed.run(sends), seed)
        times = []
        got = None
        for _ in range(repeat):
            comm.Barrier()
            t0 = now()
            got = timed.run(sends)
            elapsed = now() - t0
            times.append(comm.allreduce(elapsed, op=MPI.MAX))
        verify_received(com, rank, got, seed)
        timed.free()
        return {
            "algorithm": alg,
            # A schedule table's phases, as --simulate reports them (0 without a table).
            "phases": int(timed.n_phases) if alg in ("lp", "rsn", "rsnh") else 0,
            "schedule_seconds": float(sched_s),
            "comm_seconds": float(np.median(times)),
            "comm_seconds_min": float(np.min(times)),
            "total_seconds": float(sched_s) + float(np.sum(times)),
            "bytes": int(com.sum()),
            "tries": int(comm.allreduce(timed.tries)),
            "verified": True,
        }

    return warm_then_time(algorithms, warm, measure)
