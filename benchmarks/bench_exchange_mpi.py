"""Time every algorithm for real on this machine's MPI ranks, and predict the same runs.

Run: ``mpiexec -n N python benchmarks/bench_exchange_mpi.py [--repeat K] [--out FILE]``.

1. One shift exchange (:func:`shift_probe`: every rank sends to the next, median over
   repeats) at 8 B .. 2 MiB, fitted to ``latency + bytes / bandwidth``
   (:func:`grapeshot.sim.calibrate.fit_network`), gives a calibrated flat machine. The
   best-case ping-pong of :mod:`grapeshot.runtime.probe` and a ping-pong with all ranks busy
   (:func:`loaded_ping_pong`) are reported beside it: on a host whose ranks share cores they
   miss what an exchange pays, the OS switching between ranks. A rank's CPU cost per
   message (LogP's ``o``: posting, matching, Python) is fitted apart (:func:`fit_overhead`)
   and taken out of the latency; a buffer copy's bandwidth (:func:`copy_probe`) prices the
   collectives' packing.
2. DRS_N's remote test-and-set round trip is timed (:func:`tas_round_trip`), and
   Generate_Recv both ways of the paper's table 3 (:func:`generate_recv_times`).
3. For the CM-5 paper's three test sets at ``N`` ranks (set 1: ``d = N - 1`` uniform; set 2:
   ``d = N - 1`` non-uniform; set 3: an airfoil mesh of 2,800 points split into ``N`` parts),
   at a small and a large message unit, every algorithm is planned once and run ``K`` times
   with real payloads (the first and the last run checked byte for byte); the time of a run
   is the slowest rank's.
4. The simulator predicts each run on the calibrated machine; the orders are compared
   (Kendall's tau between measured and predicted times).

Rank 0 prints one JSON document (and writes it atomically to ``--out``).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from grapeshot.exchange.mpi_exchange import ExchangePlan, tas_round_trip
from grapeshot.exchange.payload import make_sends, verify_received
from grapeshot.exchange.schedules import ALGORITHMS, TABLE_ALGORITHMS, make_schedule
from grapeshot.exchange.workloads import airfoil, nonuniform, regular
from grapeshot.sim.exchange import simulate_exchange


def loaded_ping_pong(comm, *, repeats: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """One-way seconds (median of ``repeats`` round trips / 2) with every rank busy at once.

    Ranks pair up (``rank XOR 1``; a last odd rank idles) and ping-pong at the same time, so
    the figures include what the exchanges themselves meet on this host: ranks sharing cores,
    the OS switching between them. The median, not the best, because an exchange waits for
    its typical message, not its luckiest. Returns rank 0's ``(bytes, seconds)``.
    """
    from grapeshot.runtime.probe import SIZES

    rank, n = comm.Get_rank(), comm.Get_size()
    peer = rank ^ 1
    buf = np.zeros(max(SIZES), dtype=np.uint8)
    out = []
    for nbytes in SIZES:
        view = buf[:nbytes]
        trips = []
        comm.Barrier()
        for _ in range(repeats):
            if peer >= n:
                continue
            t0 = time.perf_counter()
            if rank < peer:
                comm.Send(view, dest=peer, tag=19)
                comm.Recv(view, source=peer, tag=19)
            else:
                comm.Recv(view, source=peer, tag=19)
                comm.Send(view, dest=peer, tag=19)
            trips.append(time.perf_counter() - t0)
        out.append(float(np.median(trips)) / 2 if trips else np.nan)
    return np.asarray(SIZES, dtype=np.float64), np.asarray(out)


def slowest_median(comm, fn, repeats: int, check=None) -> float:
    """Median over ``repeats`` calls of ``fn()`` (all ranks start together) of the slowest
    rank's seconds; the same value on every rank.

    ``check(result)``, if given, is called on the result of one untimed call before the
    timed ones and on the last timed call's, not between them: work between the calls (a
    CRC pass over the received bytes) doubled a 64 KiB exchange's time here (0.10 to 0.20
    ms on 4 ranks sharing 2 cores), which the calibration, timed back to back, does not
    see.
    """
    from mpi4py import MPI

    if check is not None:
        comm.Barrier()
        check(fn())
    times = []
    for _ in range(repeats):
        comm.Barrier()
        t0 = time.perf_counter()
        result = fn()
        times.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    if check is not None and repeats:
        check(result)
    return float(np.median(times))


def shift_probe(comm, *, repeats: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """Median seconds of one shift exchange (every rank sends to ``rank + 1``, receives from
    ``rank - 1``: one contention-free phase) for messages of 8 B to 2 MiB, slowest rank.

    This is the unit step of every schedule, measured under the conditions the exchanges
    meet on this host (all ranks active, cores shared, the OS switching between ranks), so
    fitted to ``latency + bytes / bandwidth`` it calibrates the simulator's flat network.
    Returns ``(bytes, seconds)`` on every rank.
    """

    from grapeshot.runtime.probe import SIZES

    rank, n = comm.Get_rank(), comm.Get_size()
    buf = np.zeros(max(SIZES), dtype=np.uint8)
    rbuf = np.zeros_like(buf)
    out = []
    for nbytes in SIZES:

        def shift(nbytes: int = nbytes) -> None:
            comm.Sendrecv(
                buf[:nbytes],
                dest=(rank + 1) % n,
                sendtag=19,
                recvbuf=rbuf[:nbytes],
                source=(rank - 1) % n,
                recvtag=19,
            )

        out.append(slowest_median(comm, shift, repeats))
    return np.asarray(SIZES, dtype=np.float64), np.asarray(out)


def copy_probe(comm, *, nbytes: int = 1 << 18, pool: int = 64 << 20, repeats: int = 100) -> float:
    """Bytes per second of one rank's copy of ``nbytes`` out of cache, every rank copying at
    once (slowest rank, median): what packing and unpacking the collectives' buffers costs.

    Each copy takes the next slice of a ``pool``-byte buffer, so neither end is in cache.
    That is the regime of the packing: timed next to the ``MPI_Alltoallv`` it feeds, packing
    192 KiB cost 39 us (4.9 GB/s) on 4 ranks sharing 2 cores, where a copy repeated in cache
    runs at 31-37 GB/s and this probe gives 4.9-6.2 GB/s.
    """
    src = np.ones(pool, dtype=np.uint8)
    dst = np.empty_like(src)
    slices = pool // nbytes
    at = [0]

    def copy() -> None:
        lo = (at[0] % slices) * nbytes
        at[0] += 1
        np.copyto(dst[lo : lo + nbytes], src[lo : lo + nbytes])

    return nbytes / slowest_median(comm, copy, repeats)


def generate_recv_times(comm, *, repeats: int = 50) -> dict[str, float]:
    """Table 3 on this host: median seconds (slowest rank) of Generate_Recv by global
    concatenate and by figure 1 (reduce-scatter of counts, then size notes), d = n - 1."""

    from grapeshot.exchange.mpi_recv import recv_concat, recv_reduce_scatter

    n, rank = comm.Get_size(), comm.Get_rank()
    sendl = np.where(np.arange(n) == rank, 0, 1024).astype(np.int64)
    out = {}
    for name, fn in (("concat", recv_concat), ("reduce_scatter", recv_reduce_scatter)):
        out[name] = slowest_median(comm, lambda fn=fn: fn(sendl, comm=comm), repeats)
    return out


def fit_overhead(comm, machine, *, repeat: int = 30) -> float:
    """LogP's ``o`` on this host: seconds of a rank's CPU per message posted or completed.

    AC is timed with 8-byte messages on d-regular patterns, d = 1 .. n - 1 (median over
    ``repeat`` runs, slowest rank), where the messages' count, not their bytes, sets the
    time; ``o`` is the least-squares fit of the simulator's prediction to those times (the
    prediction is linear in ``o`` at this size). Returns the same value on every rank.
    """

    rank, n = comm.Get_rank(), comm.Get_size()
    measured, base, slope = [], [], []
    probe_o = 1e-6
    for d in range(1, n):
        pattern = regular(n, d, 8, seed=0)
        plan = ExchangePlan(pattern.com[rank], comm=comm, algorithm="ac", seed=1)
        sends = make_sends(pattern.com, rank)
        plan.run(sends)
        measured.append(
            slowest_median(comm, lambda plan=plan, sends=sends: plan.run(sends), repeat)
        )
        plan.free()
        t0 = simulate_exchange(pattern, "ac", machine, seed=1).seconds
        t1 = simulate_exchange(pattern, "ac", machine, seed=1, overhead=probe_o).seconds
        base.append(t0)
        slope.append((t1 - t0) / probe_o)
    k, y = np.asarray(slope), np.asarray(measured) - np.asarray(base)
    return max(0.0, float(k @ y / (k @ k))) if k @ k > 0 else 0.0


def _sets(n: int, units: tuple[int, ...]):
    for unit in units:
        yield f"set1 regular d={n - 1} unit={unit}", regular(n, n - 1, unit, seed=1)
        yield (
            f"set2 nonuniform d={n - 1} unit={unit}",
            nonuniform(n, n - 1, max(unit // 16, 1), seed=1),
        )
        yield f"set3 airfoil 2800 unit={unit}", airfoil(2800, max(unit // 8, 1), parts=n, seed=0)


def measure(comm, *, repeat: int = 10, units: tuple[int, ...] = (512, 65536)) -> dict:
    """Measure and predict (module docstring); the result is complete on rank 0."""
    from mpi4py import MPI

    from grapeshot.model.machine import Machine, Network, NodeTree
    from grapeshot.runtime.probe import ping_pong
    from grapeshot.sim.calibrate import fit_network

    rank, n = comm.Get_rank(), comm.Get_size()
    sizes, secs = ping_pong(comm, repeats=20)
    best_fit = comm.bcast(fit_network(sizes, secs) if rank == 0 else None, root=0)
    sizes, secs = loaded_ping_pong(comm)
    loaded_fit = comm.bcast(fit_network(sizes, secs) if rank == 0 else None, root=0)
    sizes, secs = shift_probe(comm)
    fit = fit_network(sizes, secs)
    latency, bandwidth, rms = fit
    tas = comm.allreduce(tas_round_trip(comm=comm, repeats=200), op=MPI.MAX)
    recv = generate_recv_times(comm)

    copy_bandwidth = copy_probe(comm)

    def host(lat: float) -> Machine:
        return Machine(
            "this-host",
            n,
            NodeTree((("core", 1),)),
            Network(
                "flat",
                latency=max(lat, 1e-9),
                bandwidth=bandwidth,
                memcpy_bandwidth=copy_bandwidth,
            ),
        )

    # The shift exchange's fitted latency holds both ends' CPU cost of its one message;
    # with o modelled apart, the wire keeps the rest.
    overhead = fit_overhead(comm, host(latency))
    machine = host(latency - 2 * overhead)
    for alg in TABLE_ALGORITHMS:
        make_schedule(np.zeros((2, 2), np.int64), alg, seed=0)  # compile outside the timing
    cases = []
    for name, pattern in _sets(n, units):
        pattern = comm.bcast(pattern if rank == 0 else None, root=0)
        com = pattern.com
        sends = make_sends(com, rank)
        measured, predicted, plan_s = {}, {}, {}
        for alg in ALGORITHMS:
            plan = ExchangePlan(com[rank], comm=comm, algorithm=alg, seed=1)
            plan_s[alg] = comm.allreduce(plan.schedule_seconds, op=MPI.MAX)
            measured[alg] = slowest_median(
                comm,
                lambda plan=plan, sends=sends: plan.run(sends),
                repeat,
                check=lambda got, com=com: verify_received(com, rank, got),
            )
            plan.free()
            predicted[alg] = simulate_exchange(
                pattern, alg, machine, seed=1, tas_latency=tas / 2, overhead=overhead
            ).seconds
        cases.append(
            {
                "case": name,
                "summary": pattern.summary(),
                "measured_seconds": measured,
                "predicted_seconds": predicted,
                "schedule_seconds": plan_s,
                "kendall_tau": _kendall(measured, predicted),
                "fastest_measured": min(measured, key=measured.get),
                "fastest_predicted": min(predicted, key=predicted.get),
            }
        )
    return {
        "ranks": n,
        "repeat": repeat,
        "calibration": {
            "latency": latency,
            "bandwidth": bandwidth,
            "rms": rms,
            "source": "median time of one shift exchange, all ranks",
            "overhead": overhead,
            "overhead_source": "AC with 8 B messages, d = 1 .. n - 1, fitted (fit_overhead)",
            "copy_bandwidth": copy_bandwidth,
            "copy_source": "256 KiB copy out of cache, all ranks at once (copy_probe)",
        },
        "best_case_ping_pong": {"latency": best_fit[0], "bandwidth": best_fit[1]},
        "loaded_ping_pong": {"latency": loaded_fit[0], "bandwidth": loaded_fit[1]},
        "tas_round_trip_seconds": tas,
        "generate_recv_seconds": recv,
        "cases": cases,
    }


def _kendall(a: dict[str, float], b: dict[str, float]) -> float:
    from scipy.stats import kendalltau

    keys = sorted(a)
    return float(kendalltau([a[k] for k in keys], [b[k] for k in keys]).statistic)


def main() -> None:
    from mpi4py import MPI

    from grapeshot.model.atomic import write_text_atomic

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    result = measure(MPI.COMM_WORLD, repeat=args.repeat)
    if MPI.COMM_WORLD.rank == 0:
        text = json.dumps(result, indent=1)
        if args.out:
            write_text_atomic(args.out, text + "\n")
        print(text)


if __name__ == "__main__":
    main()
