"""The simulator: a program run on a modelled machine, event by event (``docs/simulator.md``).

What a user calls:

- :func:`simulate` — one workload, one placement, one machine → a :class:`SimResult`;
- :func:`run_sweep` — strategies × partitions-per-core on a trace or synthetic SPEC;
- :class:`SimOptions` and :class:`Overheads` — phases, global operations, pinning, and the
  per-task and per-message costs;
- :func:`write_timeline` — a Chrome-trace timeline of a recorded window of steps;
- :func:`fit_calibration` — latency, bandwidth and per-task overhead from a real run record;
- :class:`DynamicStrategy` and :class:`ReactiveGreedy` — rebalancing between steps.

Nothing here uses MPI; the hot loop is numba (:mod:`grapeshot.sim.engine`), checked against a
pure-Python reference (:mod:`grapeshot.sim.reference`).
"""

from grapeshot.place.dynamic import DYNAMIC_STRATEGIES, DynamicStrategy, ReactiveGreedy
from grapeshot.sim.calibrate import Calibration, fit_calibration, fit_network, fit_tasks
from grapeshot.sim.collectives import allreduce, allreduce_time
from grapeshot.sim.engine import simulate
from grapeshot.sim.network import NetworkModel, network_model
from grapeshot.sim.program import Overheads, SimOptions, build_program
from grapeshot.sim.resize import WorkloadSource, coarsen_trace, grid_for, regenerate_synthetic
from grapeshot.sim.result import SimResult
from grapeshot.sim.sweep import Run, run_one, run_sweep, strategy_names
from grapeshot.sim.timeline import chrome_trace, write_timeline

__all__ = [
    "DYNAMIC_STRATEGIES",
    "Calibration",
    "DynamicStrategy",
    "NetworkModel",
    "Overheads",
    "ReactiveGreedy",
    "Run",
    "SimOptions",
    "SimResult",
    "WorkloadSource",
    "allreduce",
    "allreduce_time",
    "build_program",
    "chrome_trace",
    "coarsen_trace",
    "fit_calibration",
    "fit_network",
    "fit_tasks",
    "grid_for",
    "network_model",
    "regenerate_synthetic",
    "run_one",
    "run_sweep",
    "simulate",
    "strategy_names",
    "write_timeline",
]
