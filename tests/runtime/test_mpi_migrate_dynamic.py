"""Dynamic strategies on real MPI ranks: partitions migrate during the run, results unchanged.

``python -m tests.runtime.test_mpi_migrate_dynamic`` under mpiexec runs SPH (particles move
between partitions) and the shallow-water code under ``reactive`` and ``birdshot-dynamic``
with short intervals, and rank 0 prints one JSON line per run; the test compares each run
with the serial executor: the same ``fields_digest`` (bitwise equal fields), every particle
kept once (ids), the same total mass, and migrations that really happened.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from tests.mpi_harness import run_mpi

STEPS = 12
CASES = [
    ("sph", "dambreak", (4, 4), (16, 16)),
    ("swe", "dambreak", (4, 4), (32, 32)),
]
STRATEGIES = {
    "reactive": {"interval": 3, "threshold": 0.0, "max_moves_fraction": 0.05},
    "birdshot-dynamic": {"interval": 2, "threshold": 0.0, "min_interval": 2},
    "refine": {"interval": 4, "threshold": 0.0},
    "greedy": {"interval": 3},
}


@dataclass(frozen=True)
class MoveOne:
    """A user's own dynamic strategy (the protocol, no factory of grapeshot's): at ``step``,
    partition ``part`` moves to the other rank."""

    part: int = 5
    step: int = 3
    interval: int = 3
    name: str = "move-one"
    initial: str = "geometric"

    def rebalance(self, *, step, loads, node_of, cores, state_bytes, comm=None, machine=None):
        if step != self.step:
            return None
        new = np.array(node_of)
        new[self.part] = 1 - new[self.part]
        return new


def _strategies():
    from grapeshot.place.dynamic import make_dynamic_strategy

    yield from ((name, make_dynamic_strategy(name, **o)) for name, o in STRATEGIES.items())
    yield "move-one", MoveOne()


def _program(app: str, scene: str, parts, cells):
    from grapeshot.apps import get_app

    return get_app(app).make_program(scene, parts, cells=cells)


def _facts(outcome) -> dict:
    fields = outcome.fields
    facts = {"digest": outcome.summary["fields_digest"]}
    if "id" in fields:
        facts["ids"] = np.sort(fields["id"]).tolist()
        facts["mass"] = float(np.sum(fields["mass"], dtype=np.float64))
    return facts


def main() -> None:
    from mpi4py import MPI

    from grapeshot.runtime.driver import run_program

    comm = MPI.COMM_WORLD
    for app, scene, parts, cells in CASES:
        for name, dynamic in _strategies():
            moves: list[int] = []
            outcome = run_program(
                _program(app, scene, parts, cells),
                steps=STEPS,
                strategy=dynamic.initial,
                seed=5,
                comm=comm,
                threads=1,
                executor="task",
                dynamic=dynamic,
                on_migrate=lambda m, moves=moves: moves.append(m.parts_moved),
            )
            if outcome is not None:
                line = {"app": app, "strategy": name, "moves": moves, **_facts(outcome)}
                line["bytes_migrated"] = outcome.summary["bytes_migrated"]
                line["final_differs"] = bool(np.any(outcome.node_of != outcome.node_of_final))
                print(json.dumps(line), flush=True)


@pytest.fixture(scope="module")
def serial() -> dict[str, dict]:
    from grapeshot.model.fields import fields_digest
    from grapeshot.runtime.serial import run_serial

    out = {}
    for app, scene, parts, cells in CASES:
        program = _program(app, scene, parts, cells)
        run = run_serial(program, STEPS)
        from grapeshot.model.fields import assemble_fields

        boxes = program.boxes()
        fields = assemble_fields(
            boxes,
            [program.output_fields(b, boxes[p]) for p, b in enumerate(run.blocks)],
            program.particle_fields,
        )
        facts = {"digest": fields_digest(fields)}
        if "id" in fields:
            facts["ids"] = np.sort(fields["id"]).tolist()
            facts["mass"] = float(np.sum(fields["mass"], dtype=np.float64))
        out[app] = facts
    return out


@pytest.mark.mpi
def test_dynamic_strategies_migrate_with_bitwise_equal_fields(serial) -> None:
    proc = run_mpi(2, ["-m", "tests.runtime.test_mpi_migrate_dynamic"], work=10)
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    assert {(x["app"], x["strategy"]) for x in lines} == {
        (a, s) for a, *_ in CASES for s in [*STRATEGIES, "move-one"]
    }
    for x in lines:
        ref = serial[x["app"]]
        assert x["digest"] == ref["digest"], x
        assert sum(x["moves"]) >= 1 and x["bytes_migrated"] > 0, x
        if "ids" in ref:  # SPH: every particle once, the same mass
            assert x["ids"] == ref["ids"]
            assert x["mass"] == ref["mass"]
    # Not a one-off: on the shallow-water dam break (the wet region moves) reactive and
    # birdshot-dynamic migrate at several of their calls.
    for name in ("reactive", "birdshot-dynamic"):
        run = next(x for x in lines if x["app"] == "swe" and x["strategy"] == name)
        assert len(run["moves"]) >= 2, run
    # A strategy of the user's own moves exactly what it proposes; its fields are the serial's.
    assert all(x["moves"] == [1] for x in lines if x["strategy"] == "move-one")


def test_run_options_name_the_strategy_problems() -> None:
    from grapeshot.model.errors import InputError
    from grapeshot.run_request import dynamic_for_run

    assert dynamic_for_run("birdshot", 0) is None
    assert dynamic_for_run("reactive", 0, interval=7).interval == 7
    assert dynamic_for_run("birdshot-best-of-k", 3).seed == 3
    with pytest.raises(InputError, match="--interval"):
        dynamic_for_run("geometric", 0, interval=5)
    with pytest.raises(InputError, match="shadow"):
        dynamic_for_run("speculative", 0)
    with pytest.raises(InputError, match="--window"):
        dynamic_for_run("refine", 0, window=5)


def test_call_steps_follow_the_interval_or_the_strategy() -> None:
    from grapeshot.place.dynamic import call_steps, make_dynamic_strategy

    assert call_steps(make_dynamic_strategy("refine", interval=4), 12) == [4, 8]
    assert call_steps(make_dynamic_strategy("birdshot-best-of-k", score_steps=3), 12) == [3]


def test_a_strategy_is_warmed_on_a_copy_before_the_clock() -> None:
    """What a strategy's first call imports (scipy's assignment solver, for reactive's
    repacking) is loaded before the run's clock starts; the strategy keeps its own state."""
    import subprocess
    import sys

    code = (
        "import sys\nimport numpy as np\n"
        "from grapeshot.place.dynamic import make_dynamic_strategy\n"
        "from grapeshot.runtime.driver import _warm_strategy\n"
        "for balancer in ('pairwise', 'affine'):\n"
        "    s = make_dynamic_strategy('reactive', balancer=balancer)\n"
        "    _warm_strategy(s, 64, np.array([1, 1]), None, None)\n"
        "    print(balancer, 'scipy.optimize' in sys.modules, len(s._home))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["pairwise True 0", "affine True 0"], out.stderr


if __name__ == "__main__":
    main()
