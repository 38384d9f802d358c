"""Plug-in walltime policies (``--policies FILE.py:Class``), no-op corrections and gap_closed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.jobs.generate import lublin_feitelson
from grapeshot.jobs.metrics import gap_closed
from grapeshot.jobs.plugin import load_plugin, parse_policies, simulate_plugin
from grapeshot.jobs.simulate import Cluster, Schedule, simulate
from grapeshot.jobs.trace import make_trace
from grapeshot.model.errors import InputError
from tests.cli.helpers import run_cli
from tests.fuzz import fuzz
from tests.jobs.test_model_checks import _random_trace

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = f"{ROOT / 'examples' / 'policy' / 'ave2_simple.py'}:Ave2Simple"
FIELDS = ("start", "end", "prediction", "walltime", "corrections", "noop_corrections", "killed")


def _same(a: Schedule, b: Schedule) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in FIELDS)


def _plugin(tmp_path: Path, body: str, name: str = "P") -> str:
    path = tmp_path / f"policy_{name.lower()}.py"
    path.write_text(body)
    return f"{path}:{name}"


@pytest.mark.parametrize("backfill", ["easy", "conservative", "sjbf"])
def test_the_example_reproduces_easy_plus_plus_simple_bit_for_bit(backfill: str) -> None:
    trace = lublin_feitelson(1500, cpus=32, load=0.9, users=12, seed=4)
    built_in = simulate(trace, "easy++-simple", Cluster(32), backfill=backfill)
    plugged = simulate_plugin(trace, load_plugin(EXAMPLE), Cluster(32), backfill=backfill)
    assert plugged.corrections.sum() > 0 and built_in.killed.sum() == 0
    assert _same(built_in, plugged)


@pytest.mark.parametrize("seed", range(4))
def test_a_constant_plugin_is_the_simple_policy(tmp_path: Path, seed: int) -> None:
    spec = _plugin(tmp_path, (
        "class P:\n"
        "    def predict(self, job, history):\n        return 600.0\n"
        "    def correct(self, job, elapsed, limit):\n        return limit + 3600.0\n"
    ))  # fmt: skip
    trace = _random_trace(seed)
    assert _same(simulate(trace, "simple", Cluster(8)), simulate_plugin(trace, load_plugin(spec),
                                                                        Cluster(8)))  # fmt: skip


def test_history_holds_only_jobs_completed_before_the_arrival(tmp_path: Path) -> None:
    spec = _plugin(tmp_path, (
        "SEEN = []\n"
        "class P:\n"
        "    def predict(self, job, history):\n"
        "        done = history.since(0)\n"
        "        SEEN.append((job.index, job.submit, len(history), done.end.max(initial=0.0),\n"
        "                     done.index.tolist()))\n"
        "        return job.request\n"
    ))  # fmt: skip
    plugin = load_plugin(spec)
    trace = _random_trace(1)
    s = simulate_plugin(trace, plugin, Cluster(8))
    seen = sys.modules[plugin.cls.__module__].SEEN
    assert [x[0] for x in seen] == list(range(len(trace)))  # once per job, in order
    for _, submit, count, last_end, done in seen:
        assert last_end <= submit and count == len(done) == len(set(done))
        # every job that ended by then is in (ends at the same instant come first)
        assert set(done) == set(np.flatnonzero(s.end <= submit).tolist())
    # No correction and kill at the request: the user-estimate policy.
    assert plugin.kill == "request" and _same(s, simulate(trace, "user-estimate", Cluster(8)))


def test_a_correction_that_does_not_grow_kills_at_the_walltime(tmp_path: Path) -> None:
    spec = _plugin(tmp_path, (
        "class P:\n    kill = 'hard'\n"
        "    def predict(self, job, history):\n        return 100.0\n"
        "    def correct(self, job, elapsed, limit):\n"
        "        return limit + 400.0 if limit < 500 else limit\n"
    ))  # fmt: skip
    t = make_trace(submit=[0.0], run=[2000.0], procs=[1], req_time=[5000.0])
    s = simulate_plugin(t, load_plugin(spec), Cluster(1))
    # 100 -> 500 at 40 s; at 440 s correct() answers 500: no growth, killed at 500 s.
    assert s.corrections.tolist() == [1] and s.walltime.tolist() == [500.0]
    assert s.killed.tolist() == [True] and s.end.tolist() == [500.0]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("class P:\n    pass\n", "has no predict(job, history)"),
        ("class P:\n    kill = 'never'\n    def predict(self, j, h):\n        return 1\n",
         "kill: got 'never'"),
        ("class P:\n    def predict(self, j, h):\n        return float('nan')\n",
         "returned nan for job 7"),
        ("class P:\n    def predict(self, j, h):\n        return 'soon'\n",
         "returned 'soon' for job 7; expected a positive finite number of seconds"),
        ("class P:\n    def predict(self, j, h):\n        return 1 / 0\n",
         "predict() raised ZeroDivisionError: division by zero on job 7"),
        ("class P:\n    def predict(self, j, h):\n        return 60\n"
         "    def correct(self, j, e, limit):\n        return limit + 1e-3\n",
         "grew job 7's walltime 10,000 times"),
        ("class P:\n    def __init__(self, x):\n        pass\n"
         "    def predict(self, j, h):\n        return 1\n", "creating it raised TypeError"),
    ],
)  # fmt: skip
def test_a_broken_plugin_is_one_line_naming_it_and_the_job(
    tmp_path: Path, body: str, message: str
) -> None:
    spec = _plugin(tmp_path, body)
    t = make_trace(submit=[0.0], run=[50_000.0], procs=[1], req_time=[100_000.0])
    t.columns["job_id"][:] = 7
    with pytest.raises(InputError) as err:
        simulate_plugin(t, load_plugin(spec), Cluster(1))
    assert str(err.value).startswith(spec) and message in str(err.value)


def test_plugins_through_the_cli(capsys, tmp_path: Path) -> None:
    log = tmp_path / "small.swf"
    trace = lublin_feitelson(400, cpus=16, load=0.9, users=6, seed=2)
    from grapeshot.jobs.swf import write_swf

    write_swf(trace, log)
    res = run_cli(capsys, "jobs", "simulate", "--swf", str(log), "--cpus", "16", "--json",
                  "--policies", f"easy++-simple,{EXAMPLE}")  # fmt: skip
    assert res.code == 0, res.err
    rows = res.json()["policies"]
    assert rows[1]["policy"] == "ave2-simple (plug-in)"
    assert {k: v for k, v in rows[0].items() if k != "policy"} == {
        k: v for k, v in rows[1].items() if k != "policy"
    }
    missing = run_cli(capsys, "jobs", "simulate", "--swf", str(log), "--policies",
                      f"{tmp_path / 'none.py'}:Q")  # fmt: skip
    assert missing.code == 2 and "none.py:Q: no file" in missing.err
    twice = run_cli(capsys, "jobs", "simulate", "--swf", str(log), "--policies",
                    f"{EXAMPLE},{EXAMPLE.replace('/policy/', '/policy/../policy/')}")  # fmt: skip
    assert twice.code == 2 and "two policies are both called" in twice.err


def test_noop_corrections_by_hand() -> None:
    # simple on 1 CPU, 10-min start. Job 0 runs 600 s = its prediction: corrected at 540 s
    # (+1 h, walltime 4200) though it ends at 600 — a correction that changed nothing.
    # Job 1 runs 700 s: corrected at 540 s and needed it. Job 2 runs 30 s, requests 40 s:
    # predicted 40 s (the request caps the 10 min), corrected at its start, ends within 40 s.
    t = make_trace(submit=[0.0, 1.0, 2.0], run=[600.0, 700.0, 30.0], procs=[1, 1, 1],
                   req_time=[600.0, 3600.0, 40.0])  # fmt: skip
    s = simulate(t, "simple", Cluster(1))
    assert s.corrections.tolist() == [1, 1, 1]
    assert s.noop_corrections.tolist() == [1, 0, 1]
    assert s.walltime.tolist() == [4200.0, 4200.0, 3640.0]
    assert s.start[2] == 1300.0  # after jobs 0 (600 s) and 1 (700 s)


def test_gap_closed_by_hand() -> None:
    assert gap_closed(20.0, 16.0, 18.0) == 0.5
    assert gap_closed(20.0, 16.0, 20.0) == 0.0
    assert gap_closed(20.0, 16.0, 14.0) == 1.5  # better than perfect walltimes (EASY)
    assert gap_closed(20.0, 16.0, 22.0) == -0.5
    assert gap_closed(16.0, 16.0, 15.0) is None and gap_closed(15.0, 16.0, 15.0) is None


@fuzz()
@given(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters=":"),
            max_size=60),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters=","),
            max_size=30),
)  # fmt: skip
def test_fuzz_policy_lists_never_traceback(tmp_path_factory, names: str, tail: str) -> None:
    # Names without a colon are built-in names or refused by --policies; with one, a file
    # that does not exist is refused naming the spec (no module is imported from fuzz text).
    try:
        chosen = parse_policies(names)
    except ValueError as exc:
        assert "policy" in str(exc) or "expected" in str(exc)
    else:
        assert chosen and len({p.name for p in chosen}) == len(chosen)
    spec = f"{tmp_path_factory.getbasetemp() / 'absent'}.py:{tail}"
    with pytest.raises(InputError) as err:
        parse_policies(f"simple,{spec}")
    assert str(err.value).startswith(("--policies", spec.strip()))
