"""``grapeshot.simulate(...)`` from Python: the command line's defaults, the same runs."""

from __future__ import annotations

import pytest

import grapeshot
from grapeshot.model.errors import InputError
from grapeshot.sim.request import SimulateRequest, prepare_simulation
from tests.cli.helpers import run_main

SPEC = "binary:parts=8x8,steps=6"


def test_grapeshot_simulate_gives_the_command_lines_runs_with_its_defaults() -> None:
    outcome = grapeshot.simulate(machine="plafrim", nodes=2, synthetic=SPEC)
    shown = run_main(
        "simulate", "--machine", "plafrim", "--nodes", "2", "--synthetic", SPEC, "--no-figure",
        "--json",
    ).json()  # fmt: skip
    # The command's default strategies, on the same machine, with the same results.
    assert [r.strategy for r in outcome.runs] == ["geometric", "birdshot"]
    assert outcome.machine.nodes == shown["nodes"] == 2
    assert [r.summary() for r in outcome.runs] == shown["runs"]


def test_a_request_is_checked_before_anything_is_simulated() -> None:
    with pytest.raises(InputError, match="--trace/--synthetic"):
        prepare_simulation(SimulateRequest(machine="plafrim"))
    with pytest.raises(InputError, match="--ppc"):
        prepare_simulation(SimulateRequest(machine="plafrim", synthetic=SPEC, ppc="0"))
    with pytest.raises(TypeError):  # keywords only: a swapped argument cannot pass silently
        SimulateRequest("plafrim", None, SPEC)  # type: ignore[misc]
