"""``grapeshot.run(...)``: ``grapeshot run`` from Python, with the command's defaults and
refusals, giving the serial executor's bits in one process and on real ranks."""

from __future__ import annotations

import json

import pytest

import grapeshot
from grapeshot.model.errors import InputError
from grapeshot.run_request import RunRequest
from grapeshot.runtime.serial import run_serial
from tests.mpi_harness import ROOT, run_mpi

HEAT = f"{ROOT / 'examples' / 'program' / 'heat.py'}:make_heat"


def _serial_digest(parts, cells, steps: int, seed: int = 0) -> str:
    from grapeshot.apps import make_app_program

    return run_serial(make_app_program(HEAT, None, parts, cells, seed), steps).digest()


def test_a_request_has_the_commands_defaults_and_reads_its_text() -> None:
    request = RunRequest(app=HEAT)
    assert request.part_shape() == (16, 16) and request.cell_shape() is None
    assert (request.steps, request.seed, request.executor) == (20, 0, "task")
    text = RunRequest(app=HEAT, parts="8x4", cells="64")
    assert text.part_shape() == (8, 4) and text.cell_shape() == (64, 64)
    assert RunRequest(app=HEAT, parts=8).part_shape() == (8, 8)
    assert RunRequest(app=HEAT, parts=(8,)).part_shape() == (8, 8)


def test_run_in_one_process_gives_the_serial_bits() -> None:
    from mpi4py import MPI

    outcome = grapeshot.run(
        app=HEAT, parts=(4, 2), cells=(64, 32), steps=3, strategy="cyclic", comm=MPI.COMM_SELF
    )
    summary = outcome.summary
    assert summary["fields_digest"] == _serial_digest((4, 2), (64, 32), 3)
    assert (summary["parts"], summary["steps"], summary["strategy"]) == (8, 3, "cyclic")


@pytest.mark.parametrize(
    ("options", "where"),
    [
        ({"parts": "0,2"}, "--parts"),
        ({"parts": (4, 2, 1, 1)}, "--parts"),
        ({"parts": (4.0, 2)}, "--parts"),
        ({"parts": None}, "--parts"),
        ({"cells": (64, 32, 16)}, "--cells"),
        ({"interval": 5}, "--interval"),  # with the static default strategy
        ({"loads": "cpu"}, "--loads"),  # likewise
        ({"loads": "time", "strategy": "refine"}, "--loads"),
        ({"lazy_moves": True}, "--lazy-moves"),
        ({"strategy": "nosuch"}, "strategy"),
        ({"steps": 0}, "--steps"),
        ({"executor": "gpu"}, "--executor"),
        ({"app": "nosuch"}, "APP"),
    ],
)
def test_run_refuses_what_the_command_refuses_naming_the_option(options, where) -> None:
    from mpi4py import MPI

    given = {"app": HEAT, "parts": (4, 2), "cells": (64, 32), "steps": 2, **options}
    with pytest.raises(InputError) as refused:
        grapeshot.run(comm=MPI.COMM_SELF, **given)
    assert where in str(refused.value)


def test_an_option_the_command_does_not_have_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="parts_shape"):
        grapeshot.run(app=HEAT, parts_shape=(4, 2))


SCRIPT = """
import json, grapeshot
moves = []
outcome = grapeshot.run(app={app!r}, parts="8,4", cells="64,32", steps=6, strategy="refine",
                        interval=2, loads="cpu", lazy_moves=True, on_migrate=moves.append)
if outcome is not None:
    print(json.dumps({{"digest": outcome.summary["fields_digest"],
                      "ranks": outcome.summary["ranks"], "dynamic": outcome.summary["dynamic"],
                      "loads": outcome.summary["loads"],
                      "deferred": outcome.summary["proposals_deferred"],
                      "calls": len(outcome.rebalances["step"])}}))
"""


def test_run_on_two_ranks_with_a_dynamic_strategy_gives_the_serial_bits() -> None:
    """``refine`` every 2 steps on the tasks' measured CPU seconds, its moves made when paid
    for (what it moves varies from run to run: the fields do not)."""
    proc = run_mpi(2, ["-m", "mpi4py", "-c", SCRIPT.format(app=HEAT)], work=5)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["ranks"] == 2 and got["dynamic"]["name"] == "refine" and got["calls"] == 2
    assert got["loads"] == "cpu" and got["deferred"] in (0, 1)
    assert got["digest"] == _serial_digest((8, 4), (64, 32), 6)
