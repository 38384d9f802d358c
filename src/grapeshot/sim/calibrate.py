"""Fit the simulator's network and overhead parameters to what a real run recorded.

A run record of the real runtime gives, for inter-node messages, their size and the seconds
from the send being posted to the receive completing, and for tasks, their trace cost and the
seconds they took. The simulator's model of those is linear:

- a message alone on the network: ``seconds = latency + bytes / bandwidth``;
- a task: ``seconds = scale * cost + task_overhead`` (``scale`` ≈ 1 when the trace's costs
  are seconds measured on the same cores; otherwise it converts them).

:func:`fit_calibration` fits both lines on relative residuals (jitter grows with the time)
with a robust soft-L1 loss, so the few messages that queued behind others or the tasks a
straggler slowed do not drag the fit, under the constraints ``latency, task_overhead >= 0``
and ``bandwidth, scale > 0``.

The procedure (``docs/simulator.md``): run the program once for real on a few nodes with
recording on; take messages that did not wait in a queue (e.g. the first of each step per
NIC) and every task; fit; then :meth:`Calibration.apply` gives the machine and the overheads
to simulate with. A message's measured time includes the software send and receive paths, so
the fitted latency already holds them: ``apply`` takes the per-message overhead you keep in
the overheads (default 0) and removes it twice from the latency.

A run that rebalanced inside records each call of its strategy; those are measured, not
fitted (:func:`fit_rebalances`): the call's own seconds, the re-plan's per partition held, and
the bytes a moved partition carried per cell.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine
from grapeshot.sim.program import Overheads


@dataclass(frozen=True)
class Calibration:
    """Fitted parameters and how well they fit.

    Attributes
    ----------
    latency
        Seconds, the fitted intercept of message time.
    bandwidth
        Bytes per second, the inverse of the fitted slope of message time.
    task_overhead
        Seconds per sample of the task fit, its intercept: per partition per step when
        fitted from a run record (all of a step's phases together).
    task_scale
        Seconds of task time per unit of trace cost.
    message_rms, task_rms
        Root-mean-square residuals of the two fits, seconds.
    copy_bandwidth
        Bytes per second at which the runtime packs, unpacks and copies halos (``None``:
        not measured; the machine's own figure is kept).
    serial_overhead
        Seconds of the runtime's own bookkeeping on a rank's main thread (outside tasks,
        halo copies and waiting), per partition per step.
    rebalance_overhead, replan_overhead
        A dynamic strategy's call on the runtime (0 when the run made none): seconds of the
        call itself (gathering the loads, deciding, moving the blocks, less the moved state's
        time on the fitted network, which the simulator adds), and seconds per partition a
        rank holds to re-plan in place after a call that moved some
        (:class:`~grapeshot.sim.program.Overheads`' ``rebalance`` and ``replan``).
    state_bytes_per_cell
        Bytes a moved partition's state took per cell of it (``None``: nothing moved).
    """

    latency: float
    bandwidth: float
    task_overhead: float
    task_scale: float
    message_rms: float
    task_rms: float
    copy_bandwidth: float | None = None
    serial_overhead: float = 0.0
    rebalance_overhead: float = 0.0
    replan_overhead: float = 0.0
    state_bytes_per_cell: float | None = None

    def apply(
        self,
        machine: Machine,
        *,
        message_overhead: float = 0.0,
        phases: int = 1,
        measured_costs: bool = False,
    ) -> tuple[Machine, Overheads]:
        """The machine with the fitted network, and the overheads to simulate it with.

        Parameters
        ----------
        machine
            The machine whose network latency and bandwidth are replaced.
        message_overhead
            The per-message software overhead to keep in :class:`Overheads` (seconds at each
            end); it is taken out of the fitted latency twice, since the measured message
            time already contains it.
        phases
            Phases per step of the simulation: the per-step overheads (task and serial) are
            spread over its ``phases`` tasks per partition and step.
        measured_costs
            The simulated trace's costs are measured task seconds (a run record), which hold
            the tasks' own overhead already: only the runtime's bookkeeping is added. Also the
            copy bandwidth is the measured one, if any.
        """
        if isinstance(phases, bool) or not isinstance(phases, int) or phases < 1:
            raise InputError("phases", f"got {phases!r}", "an integer >= 1")
        latency = self.latency - 2.0 * message_overhead
        if latency < 0:
            raise InputError(
                "message_overhead",
                f"2 x {message_overhead} exceeds the fitted latency {self.latency}",
                "a per-message overhead below half the fitted latency",
            )
        network = dataclasses.replace(
            machine.network, latency=float(latency), bandwidth=float(self.bandwidth)
        )
        per_step = self.serial_overhead + (0.0 if measured_costs else self.task_overhead)
        over = Overheads(
            task=per_step / phases,
            message=message_overhead,
            copy_bandwidth=self.copy_bandwidth,
            rebalance=self.rebalance_overhead,
            replan=self.replan_overhead,
        )
        return dataclasses.replace(machine, network=network), over


def _check_pairs(x: np.ndarray, y: np.ndarray, xname: str, yname: str) -> None:
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise InputError(
            f"{xname}/{yname}",
            f"have shapes {x.shape} and {y.shape}",
            "two 1-D arrays, same length",
        )
    if x.size < 2:
        raise InputError(xname, f"has {x.size} samples", "at least 2")
    for name, arr in ((xname, x), (yname, y)):
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise InputError(name, "has negative or non-finite values", "finite numbers >= 0")
    if np.ptp(x) == 0:
        raise InputError(xname, f"has one distinct value ({x[0]})", "at least 2 distinct values")


def _fit_line(x: np.ndarray, y: np.ndarray, *, slope_floor: float) -> tuple[float, float, float]:
    """Robust ``y = a + b x`` with ``a >= 0``, ``b >= slope_floor``; returns (a, b, rms).

    Residuals are relative (``(a + b x - y) / y``): timing jitter grows with the time, and
    relative residuals let the short samples pin the intercept and the long ones the slope.
    A first weighted least-squares pass gives the start and the scale of the soft-L1 loss
    (1.4826 median absolute deviations of its residuals).
    """
    xs = float(np.abs(x).max()) or 1.0
    ys = float(np.abs(y).max()) or 1.0
    u, v = x / xs, y / ys
    weight = 1.0 / np.maximum(v, 1e-9)
    design = np.column_stack([np.ones_like(u), u]) * weight[:, None]
    a0, b0 = np.linalg.lstsq(design, v * weight, rcond=None)[0]
    floor = slope_floor * xs / ys
    start = np.array([max(a0, 0.0), max(b0, floor + 1e-12)])

    def residual(theta: np.ndarray) -> np.ndarray:
        return (theta[0] + theta[1] * u - v) * weight

    # scipy.optimize takes a quarter of a second to import, and every ``simulate`` imports
    # this module: only a calibration pays for it.
    from scipy.optimize import least_squares

    first = residual(start)
    scale = 1.4826 * float(np.median(np.abs(first - np.median(first)))) or 1e-3
    fit = least_squares(
        residual,
        start,
        loss="soft_l1",
        f_scale=scale,
        bounds=([0.0, floor], [np.inf, np.inf]),
        method="trf",
        x_scale="jac",
    )
    a = float(fit.x[0] * ys)
    b = float(fit.x[1] * ys / xs)
    rms = float(np.sqrt(np.mean((a + b * x - y) ** 2)))
    return a, b, rms


def fit_network(message_bytes: np.ndarray, seconds: np.ndarray) -> tuple[float, float, float]:
    """Fit ``seconds = latency + bytes / bandwidth``; return (latency, bandwidth, rms)."""
    x = np.asarray(message_bytes, dtype=np.float64)
    y = np.asarray(seconds, dtype=np.float64)
    _check_pairs(x, y, "message bytes", "message seconds")
    a, b, rms = _fit_line(x, y, slope_floor=1e-18)
    return a, 1.0 / b, rms


def fit_tasks(task_cost: np.ndarray, seconds: np.ndarray) -> tuple[float, float, float]:
    """Fit ``seconds = scale * cost + overhead``; return (overhead, scale, rms)."""
    x = np.asarray(task_cost, dtype=np.float64)
    y = np.asarray(seconds, dtype=np.float64)
    _check_pairs(x, y, "task cost", "task seconds")
    a, b, rms = _fit_line(x, y, slope_floor=1e-12)
    return a, b, rms


def fit_calibration(
    message_bytes: np.ndarray,
    message_seconds: np.ndarray,
    task_cost: np.ndarray,
    task_seconds: np.ndarray,
    *,
    copy_bandwidth: float | None = None,
    serial_overhead: float = 0.0,
    rebalance: tuple[float, float, float | None] = (0.0, 0.0, None),
) -> Calibration:
    """Fit latency, bandwidth, per-task overhead (and cost scale) from a run record.

    Parameters
    ----------
    message_bytes, message_seconds
        Size and observed seconds of inter-node messages (same length, at least two sizes).
    task_cost, task_seconds
        Trace cost and observed seconds of tasks (same length, at least two costs).
    copy_bandwidth, serial_overhead
        Measured directly, not fitted: carried into the :class:`Calibration`.
    rebalance
        ``(rebalance_overhead, replan_overhead, state_bytes_per_cell)`` measured directly
        (:func:`fit_rebalances`), carried into the :class:`Calibration`.

    Returns
    -------
    Calibration
    """
    latency, bandwidth, m_rms = fit_network(message_bytes, message_seconds)
    overhead, scale, t_rms = fit_tasks(task_cost, task_seconds)
    return Calibration(
        latency, bandwidth, overhead, scale, m_rms, t_rms, copy_bandwidth, serial_overhead,
        *rebalance,
    )  # fmt: skip


def fit_rebalances(
    calls: dict[str, np.ndarray],
    node_of: np.ndarray,
    cells: np.ndarray,
    bandwidth: float,
) -> tuple[float, float, float | None]:
    """What a dynamic strategy's call costs on the runtime, from a record's ``run/rebalances``.

    Parameters
    ----------
    calls
        The record's columns (:mod:`grapeshot.runtime.record`): ``parts_moved``, ``bytes``,
        ``node_of`` ``(n, P)`` and, per rank, ``call_seconds`` and ``seconds`` ``(n, ranks)``.
    node_of
        int, ``(P,)``: the placement before the first call.
    cells
        int, ``(P,)``: cells of each partition.
    bandwidth
        Bytes per second of the fitted network.

    Returns
    -------
    tuple
        ``(rebalance, replan, state_bytes_per_cell)``: the call's seconds, the mean over
        calls of the least time a rank spent in it (the rank that finished its steps last
        waits for no other; for a call that moved nothing, the whole pause between the
        rank's segments) less the moved bytes' time on the network (spread over the ranks'
        links, as the simulator sends them); the re-plan's seconds per partition a
        rank holds, the longest time a rank spent after the call (re-planning; every rank
        leaves the call together) summed over the calls that moved partitions, over the
        partitions the fullest rank held after each; bytes moved per cell moved (``None`` if
        none moved).
    """
    n = len(calls["parts_moved"])
    if n == 0:
        return 0.0, 0.0, None
    call = np.asarray(calls["call_seconds"], dtype=np.float64).reshape(n, -1)
    between = np.asarray(calls["seconds"], dtype=np.float64).reshape(n, -1)
    nbytes = np.asarray(calls["bytes"], dtype=np.float64)
    after = np.asarray(calls["node_of"], dtype=np.int64).reshape(n, -1)
    ranks = call.shape[1]
    transfer = nbytes / (ranks * bandwidth)
    moved = np.asarray(calls["parts_moved"]) > 0
    # A call that moved nothing: the whole pause (the call, and the runner closing its segment
    # and starting the next); one that moved: the call, the rest is the re-plan's.
    own = np.where(moved[:, None], call, between)
    rebalance = float(np.maximum(own.min(axis=1) - transfer, 0.0).mean())
    replan = 0.0
    if moved.any():
        held = np.array([np.bincount(a, minlength=ranks).max() for a in after[moved]])
        # The ranks leave the call together (its moves are an alltoall); the re-plan ends on
        # each in its own time, and the next steps wait for the last.
        after_call = np.maximum(between - call, 0.0)[moved].max(axis=1)
        replan = float(after_call.sum() / held.sum())
    before = np.vstack([np.asarray(node_of, dtype=np.int64)[None, :], after[:-1]])
    moved_cells = float(np.asarray(cells)[None, :].repeat(n, axis=0)[before != after].sum())
    per_cell = float(nbytes.sum()) / moved_cells if moved_cells > 0 else None
    return rebalance, replan, per_cell


def calibration_from_record(path: str) -> Calibration:
    """Fit the simulator to a run record of the real runtime (``grapeshot run --record``).

    - **Network**: the ping-pong the run made after its steps (``run/network``: one-way
      seconds of messages of 8 B to 2 MiB), else the run's own messages (``run/messages``,
      if they have at least two sizes; messages whose time is not positive, which only clock
      skew between nodes produces, are left out).
    - **Tasks**: the work count of each partition in each step (``work``) against its
      measured kernel seconds in that step (``cost``), so the fitted scale converts the
      app's work units to seconds and the overhead is per partition per step.
    - **Runtime**: the bytes its halo copies moved over the seconds they took
      (``run/ranks/copied_bytes`` / ``halo_seconds`` plus ``run/tasks/halo``, the copies
      tasks made themselves), and its bookkeeping
      (``run/ranks/serial_seconds``) per partition per step.
    - **Rebalancing** (a run with a dynamic strategy or ``--migrate-at``): each call's and
      re-plan's seconds and the state bytes moved (``run/rebalances``, :func:`fit_rebalances`).

    Errors name the file and the dataset.
    """
    import h5py

    from grapeshot.model.workload_file import load_workload

    workload = load_workload(path)
    if workload.work is None:
        raise InputError(f"{path}: dataset 'work'", "missing", "a run record of grapeshot run")
    with h5py.File(path, "r") as f:
        if "run/network/bytes" in f:
            message_bytes = f["run/network/bytes"][()].astype(np.float64)
            message_seconds = f["run/network/seconds"][()]
        elif "run/messages/bytes" in f:
            message_bytes = f["run/messages/bytes"][()].astype(np.float64)
            message_seconds = f["run/messages/seconds"][()]
            if np.unique(message_bytes).size < 2:
                raise InputError(
                    f"{path}: dataset 'run/network/bytes'",
                    "missing, and the run's messages all have one size",
                    "a record written by grapeshot run --record on two ranks or more",
                )
        else:
            raise InputError(
                f"{path}: dataset 'run/network/bytes'",
                "missing",
                "a run record of grapeshot run on two ranks or more",
            )
        ranks = f.get("run/ranks")
        copied = halo = serial = None
        if ranks is not None and "copied_bytes" in ranks:
            copied = float(ranks["copied_bytes"][()].sum())
            halo = float(ranks["halo_seconds"][()].sum())
            if "run/tasks/halo" in f:  # the copies tasks made themselves (fused exchanges)
                halo += float(f["run/tasks/halo"][()].sum())
            serial = float(ranks["serial_seconds"][()].sum())
        calls = None
        if "run/rebalances" in f:
            calls = {k: v[()] for k, v in f["run/rebalances"].items()}
            first = f["run/node_of"][()]
    # One-way times come from two ranks' system clocks; between nodes whose clocks drift
    # apart a message can appear to arrive before it left. Those carry no information.
    valid = message_seconds > 0
    message_bytes, message_seconds = message_bytes[valid], message_seconds[valid]
    samples = workload.cost.size  # partitions x steps
    cal = fit_calibration(
        message_bytes,
        message_seconds,
        workload.work.reshape(-1).astype(np.float64),
        workload.cost.reshape(-1),
        copy_bandwidth=copied / halo if copied and halo else None,
        serial_overhead=serial / samples if serial else 0.0,
    )
    if calls is None:
        return cal
    from grapeshot.place.replay import cells_per_part

    fitted = fit_rebalances(calls, first, cells_per_part(workload), cal.bandwidth)
    return dataclasses.replace(
        cal, rebalance_overhead=fitted[0], replan_overhead=fitted[1], state_bytes_per_cell=fitted[2]
    )
