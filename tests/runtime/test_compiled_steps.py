"""Several steps' phases in one compiled call (:mod:`grapeshot.runtime.compiled_steps`): the
same fields as the serial executor, every checkpoint at its step, and ranks that run phase by
phase beside ranks that do not."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from grapeshot.model.checkpoint_file import read_index
from tests.mpi_harness import ROOT, TWO_NODES, run_mpi, skip_unless_two_nodes

pytestmark = pytest.mark.mpi

ALLEN_CAHN = f"{ROOT / 'examples' / 'program' / 'allen_cahn.py'}:make_allen_cahn"


def _run(n: int, args: list[str], env: dict[str, str] | None = None):
    """``grapeshot run ARGS --json`` on ``n`` ranks: the summary and, per rank, the steps each
    of its compiled calls ran (empty: phase by phase)."""
    proc = run_mpi(n, ["-m", "tests.runtime.mpi_compiled_steps", *args, "--json"], env=env)
    calls = {
        int(rank): json.loads(steps)
        for rank, steps in re.findall(r"compiled-steps (\d+) (\[[^]]*\])", proc.stderr)
    }
    assert sorted(calls) == list(range(n)), proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), calls


def _serial(args: list[str]) -> str:
    summary, _ = _run(1, [*args, "--executor", "serial"])
    return summary["fields_digest"]


def test_calls_of_several_steps_keep_the_fields_and_every_checkpoint(tmp_path: Path) -> None:
    program = ["--app", ALLEN_CAHN, "--cells", "256,128", "--parts", "8,8", "--steps", "60"]
    ck = tmp_path / "ck.h5"
    summary, calls = _run(2, [*program, "--checkpoint", str(ck), "--checkpoint-every", "7"])
    assert summary["fields_digest"] == _serial(program)
    for steps in calls.values():
        # Steps of ~0.2 ms: every call but the segments' first runs several, and no call runs
        # past a checkpoint's step (the calls' ends reach every multiple of 7).
        assert sum(steps) == 60 and max(steps) > 1, steps
        assert set(range(7, 60, 7)) <= set(np.cumsum(steps).tolist()), steps
    assert read_index(ck).step == 56


def test_a_rank_that_runs_phase_by_phase_makes_every_rank_ask_at_every_step(
    tmp_path: Path,
) -> None:
    """Three strips on two emulated nodes, {0, 2} and {1}: rank 0 hears only from rank 2, its
    node neighbour, and runs its phases in compiled calls; ranks 1 and 2 hear from the other
    node and run phase by phase. The ranks' agreement then gives one step a call: every rank
    asks at every step's end, the checkpoints are where they belong, the fields equal."""
    skip_unless_two_nodes(3)
    placement = tmp_path / "strips.npy"
    np.save(placement, np.array([0, 2, 1], dtype=np.int64))
    program = ["--app", ALLEN_CAHN, "--cells", "96,32", "--parts", "3,1", "--steps", "20"]
    ck = tmp_path / "ck.h5"
    summary, calls = _run(
        3,
        [*program, "--placement", str(placement), "--checkpoint", str(ck),
         "--checkpoint-every", "5"],
        env=TWO_NODES,
    )  # fmt: skip
    assert summary["fields_digest"] == _serial(program)
    assert calls[1] == [] and calls[2] == [], calls
    assert calls[0] and set(calls[0]) <= {0, 1}, calls[0]
    assert read_index(ck).step == 20
