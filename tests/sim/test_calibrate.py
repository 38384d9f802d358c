"""The calibration hook: fit latency, bandwidth and per-task overhead from a run record."""

from __future__ import annotations

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.machine_file import load_machine
from grapeshot.sim import fit_calibration, fit_network, fit_tasks


def synthetic_record(seed: int = 0) -> tuple[np.ndarray, ...]:
    """A fake run record: 80 µs + bytes / 1.1 GB/s messages, tasks 1.05 x cost + 35 µs,
    with 3% noise and a few messages that queued behind others."""
    rng = np.random.default_rng(seed)
    nbytes = rng.integers(64, 4_000_000, size=2000).astype(float)
    msg = (80e-6 + nbytes / 1.1e9) * rng.normal(1.0, 0.03, size=nbytes.size)
    queued = rng.choice(nbytes.size, size=40, replace=False)
    msg[queued] += rng.uniform(1e-3, 5e-3, size=40)
    cost = rng.uniform(1e-4, 2e-2, size=5000)
    task = (1.05 * cost + 35e-6) * rng.normal(1.0, 0.02, size=cost.size)
    return nbytes, msg, cost, task


def test_fit_recovers_the_parameters_despite_outliers() -> None:
    nbytes, msg, cost, task = synthetic_record()
    cal = fit_calibration(nbytes, msg, cost, task)
    assert cal.latency == pytest.approx(80e-6, rel=0.03)
    assert cal.bandwidth == pytest.approx(1.1e9, rel=0.01)
    assert cal.task_overhead == pytest.approx(35e-6, rel=0.1)
    assert cal.task_scale == pytest.approx(1.05, rel=0.005)
    assert cal.message_rms > 0 and cal.task_rms > 0


def test_exact_data_is_fitted_exactly() -> None:
    nbytes = np.array([0.0, 1e3, 1e6, 4e6])
    lat, bw, rms = fit_network(nbytes, 50e-6 + nbytes / 1.25e9)
    assert lat == pytest.approx(50e-6, rel=1e-6)
    assert bw == pytest.approx(1.25e9, rel=1e-6)
    assert rms < 1e-12
    over, scale, _ = fit_tasks(np.array([1e-3, 2e-3, 5e-3]), np.array([1.02e-3, 2.02e-3, 5.02e-3]))
    assert over == pytest.approx(20e-6, rel=1e-6) and scale == pytest.approx(1.0, rel=1e-6)


def test_apply_gives_the_machine_and_overheads_to_simulate() -> None:
    nbytes, msg, cost, task = synthetic_record(1)
    cal = fit_calibration(nbytes, msg, cost, task)
    machine, over = cal.apply(load_machine("ec2-c4.8xlarge", 8), message_overhead=5e-6)
    assert machine.nodes == 8
    assert machine.network.latency == pytest.approx(cal.latency - 10e-6)
    assert machine.network.bandwidth == cal.bandwidth
    assert over.task == cal.task_overhead and over.message == 5e-6
    with pytest.raises(InputError, match="message_overhead"):
        cal.apply(machine, message_overhead=1.0)


@pytest.mark.parametrize(
    ("x", "y", "match"),
    [
        (np.array([1.0]), np.array([1.0]), "at least 2"),
        (np.array([1.0, 1.0]), np.array([1.0, 2.0]), "distinct"),
        (np.array([1.0, 2.0]), np.array([1.0]), "shapes"),
        (np.array([1.0, -2.0]), np.array([1.0, 2.0]), "negative"),
        (np.array([1.0, 2.0]), np.array([1.0, np.nan]), "non-finite"),
    ],
)
def test_bad_records_are_input_errors(x: np.ndarray, y: np.ndarray, match: str) -> None:
    with pytest.raises(InputError, match=match):
        fit_network(x, y)
