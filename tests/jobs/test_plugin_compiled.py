"""Compiled plug-in policies (``predict``/``correct`` as numba functions inside the kernel)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grapeshot.jobs.generate import lublin_feitelson
from grapeshot.jobs.plugin import load_plugin, simulate_plugin
from grapeshot.jobs.simulate import Cluster, Schedule, simulate
from grapeshot.jobs.trace import make_trace
from grapeshot.model.errors import InputError
from tests.cli.helpers import run_cli
from tests.jobs.test_model_checks import _random_trace

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = f"{ROOT / 'examples' / 'policy' / 'ave2_simple_compiled.py'}:Ave2SimpleCompiled"
FIELDS = ("start", "end", "prediction", "walltime", "corrections", "noop_corrections", "killed")
HEAD = "import numpy as np\nfrom numba import njit\n"


def _same(a: Schedule, b: Schedule) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in FIELDS)


def _plugin(tmp_path: Path, body: str, name: str = "P") -> str:
    path = tmp_path / f"compiled_{name.lower()}.py"
    path.write_text(HEAD + body)
    return f"{path}:{name}"


@pytest.mark.parametrize("backfill", ["easy", "conservative", "sjbf", "fcfs"])
def test_the_compiled_example_reproduces_easy_plus_plus_simple_bit_for_bit(backfill: str) -> None:
    trace = lublin_feitelson(1500, cpus=32, load=0.9, users=12, seed=4)
    built_in = simulate(trace, "easy++-simple", Cluster(32), backfill=backfill)
    plugged = simulate_plugin(trace, load_plugin(EXAMPLE), Cluster(32), backfill=backfill)
    assert plugged.corrections.sum() > 0 and plugged.policy == "ave2-simple (compiled plug-in)"
    assert _same(built_in, plugged)


def test_history_holds_only_jobs_completed_before_the_arrival(tmp_path: Path) -> None:
    # state[2j] = completions seen by job j, state[2j+1] = the latest end among them; no
    # correct(): killed at the prediction, which is the request (the user-estimate policy).
    spec = _plugin(tmp_path, (
        "class P:\n"
        "    def state(self, n_jobs, n_users):\n        return np.full(2 * n_jobs, -1.0)\n"
        "    @staticmethod\n    @njit\n"
        "    def predict(job, history, state):\n"
        "        state[2 * job.index] = len(history.index)\n"
        "        state[2 * job.index + 1] = history.end.max() if len(history.end) else 0.0\n"
        "        return job.request\n"
    ))  # fmt: skip
    seen = {}

    class Keep(load_plugin(spec).cls):  # keeps the state array the simulation used
        def state(self, n_jobs, n_users):
            seen["state"] = super().state(n_jobs, n_users)
            return seen["state"]

    plugin = load_plugin(spec)
    plugin = type(plugin)(plugin.spec, plugin.name, plugin.kill, Keep)
    trace = _random_trace(1)
    s = simulate_plugin(trace, plugin, Cluster(8))
    count, last_end = seen["state"][0::2], seen["state"][1::2]
    done_by = np.array([np.count_nonzero(s.end <= t) for t in trace.submit])
    assert np.array_equal(count, done_by) and np.all(last_end <= trace.submit)
    assert plugin.kill == "request" and _same(s, simulate(trace, "user-estimate", Cluster(8)))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("    @staticmethod\n    @njit\n    def predict(job, history, state):\n"
         "        return -5.0\n", "predict() returned -5.0 on job 7"),
        ("    @staticmethod\n    @njit\n    def predict(job, history, state):\n"
         "        if job.job_id == 7:\n            raise ValueError('no')\n"
         "        return 60.0\n", "predict() raised an exception on job 7"),
        ("    @staticmethod\n    @njit\n    def predict(job, history, state):\n"
         "        return 60.0\n"
         "    @staticmethod\n    @njit\n    def correct(job, elapsed, limit):\n"
         "        return limit + 1e-3\n", "grew job 7's walltime 10,000 times"),
        ("    @staticmethod\n    @njit\n    def predict(job, history, state):\n"
         "        return 60.0\n"
         "    def correct(self, job, elapsed, limit):\n        return limit\n",
         "predict is compiled (@njit) but correct is not"),
        ("    @staticmethod\n    @njit\n    def predict(job, history, state):\n"
         "        return job.no_such_field\n",
         "does not compile: Unknown attribute 'no_such_field' of type Job("),
        ("    def state(self, n_jobs, n_users):\n        return [0.0]\n"
         "    @staticmethod\n    @njit\n    def predict(job, history, state):\n"
         "        return 60.0\n", "state(): returned list; expected a 1-D float64 numpy array"),
    ],
)  # fmt: skip
def test_a_broken_compiled_plugin_is_one_line_naming_it_and_the_job(
    capfd, tmp_path: Path, body: str, message: str
) -> None:
    spec = _plugin(tmp_path, "class P:\n" + body)
    t = make_trace(submit=[0.0], run=[50_000.0], procs=[1], req_time=[100_000.0])
    t.columns["job_id"][:] = 7
    with pytest.raises(InputError) as err:
        simulate_plugin(t, load_plugin(spec), Cluster(1))
    assert str(err.value).startswith(spec) and message in str(err.value)
    assert "Traceback" not in capfd.readouterr().err  # nothing escapes the C callback


def test_compiled_plugins_through_the_cli(capsys, tmp_path: Path) -> None:
    log = tmp_path / "small.swf"
    trace = lublin_feitelson(400, cpus=16, load=0.9, users=6, seed=2)
    from grapeshot.jobs.swf import write_swf

    write_swf(trace, log)
    res = run_cli(capsys, "jobs", "simulate", "--swf", str(log), "--cpus", "16", "--json",
                  "--backfill", "conservative",
                  "--policies", f"easy++-simple,{EXAMPLE}")  # fmt: skip
    assert res.code == 0, res.err
    rows = res.json()["policies"]
    assert rows[1]["policy"] == "ave2-simple (compiled plug-in)"
    assert {k: v for k, v in rows[0].items() if k != "policy"} == {
        k: v for k, v in rows[1].items() if k != "policy"
    }


ERRATIC = (
    "class Py:\n"
    "    SEEN = []\n"
    "    def predict(self, job, history):\n"
    "        Py.SEEN.append((job.index, len(history)))\n"
    "        return max(1.0, (job.index * 7919 % 97 + 1) / 40.0 * job.request)\n"
    "    def correct(self, job, elapsed, limit):\n"
    "        return limit + (job.index % 5) * 300.0\n"
    "class Nb:\n"
    "    def state(self, n_jobs, n_users):\n        return np.zeros(n_jobs)\n"
    "    @staticmethod\n    @njit\n"
    "    def predict(job, history, state):\n"
    "        state[job.index] = len(history.index)\n"
    "        return max(1.0, (job.index * 7919 % 97 + 1) / 40.0 * job.request)\n"
    "    @staticmethod\n    @njit\n"
    "    def correct(job, elapsed, limit):\n"
    "        return limit + (job.index % 5) * 300.0\n"
)


@pytest.mark.parametrize("backfill", ["easy", "conservative", "sjbf", "fcfs"])
@pytest.mark.parametrize("seed", [1, 2])
def test_python_and_compiled_plugins_agree_and_see_the_same_history(
    tmp_path: Path, backfill: str, seed: int
) -> None:
    # Predictions from far below to above the request, corrections that sometimes stop: a
    # Python plug-in predicts every arrival that cannot see another completion at once
    # (grapeshot.jobs.plugin), a compiled one job by job inside the kernel; both must see
    # exactly the jobs completed by each arrival and give one schedule.
    py, nb = _plugin(tmp_path, ERRATIC, "Py"), _plugin(tmp_path, ERRATIC, "Nb")
    trace = lublin_feitelson(800, cpus=16, load=1.1, users=7, seed=seed)
    python = load_plugin(py)
    python.cls.SEEN.clear()
    a = simulate_plugin(trace, python, Cluster(16), backfill=backfill)
    kept = {}

    class Keep(load_plugin(nb).cls):
        def state(self, n_jobs, n_users):
            kept["state"] = super().state(n_jobs, n_users)
            return kept["state"]

    compiled = load_plugin(nb)
    b = simulate_plugin(trace, type(compiled)(nb, "nb", "hard", Keep), Cluster(16),
                        backfill=backfill)  # fmt: skip
    assert _same(a, b) and a.killed.any() and a.corrections.sum() > 0
    done_by = [int(np.count_nonzero(a.end <= t)) for t in trace.submit]
    assert python.cls.SEEN == list(enumerate(done_by))  # once per job, in order
    assert kept["state"].tolist() == done_by


# The boundaries of the prediction clamp and of the correction rule (grapeshot.jobs.rules),
# one job each: (prediction, correction step added to the limit, request, run) and what must
# happen (first walltime, last walltime, corrections, killed, seconds run). Hard limit 10,000 s.
RULE_CASES = [
    (1000.0, 0.0, 500.0, 400.0, 500.0, 500.0, 0, 0, 400.0),  # capped at the request
    (0.25, 100.0, 50.0, 0.5, 1.0, 101.0, 1, 0, 0.5),  # at least 1 s; fires at its start
    (600.0, 300.0, 5000.0, 540.0, 600.0, 600.0, 0, 0, 540.0),  # ends exactly lead s early
    (600.0, 300.0, 5000.0, 541.0, 600.0, 900.0, 1, 0, 541.0),  # 1 s later: one correction
    (9000.0, 5000.0, 20000.0, 12000.0, 9000.0, 10000.0, 1, 1, 10000.0),  # capped at the hard
    (600.0, 0.0, 5000.0, 2000.0, 600.0, 600.0, 0, 1, 600.0),  # no growth: stops, killed
    (600.0, -10.0, 5000.0, 2000.0, 600.0, 600.0, 0, 1, 600.0),  # shrinks: stops, killed
    (20000.0, 100.0, 20000.0, 12000.0, 10000.0, 10000.0, 0, 1, 10000.0),  # at the hard limit
    (600.0, 30.0, 5000.0, 700.0, 600.0, 780.0, 6, 0, 700.0),  # +30 s until 700 <= w - 60
]
RULES = (
    "PRED = np.array([{pred}])\nSTEP = np.array([{step}])\n"
    "class Py:\n"
    "    def predict(self, job, history):\n        return float(PRED[job.index])\n"
    "    def correct(self, job, elapsed, limit):\n        return limit + float(STEP[job.index])\n"
    "class Nb:\n"
    "    @staticmethod\n    @njit\n"
    "    def predict(job, history, state):\n        return PRED[job.index]\n"
    "    @staticmethod\n    @njit\n"
    "    def correct(job, elapsed, limit):\n        return limit + STEP[job.index]\n"
)


def test_python_and_compiled_plugins_apply_one_correction_rule(tmp_path: Path) -> None:
    # Both paths clamp the prediction and apply each correction through grapeshot.jobs.rules;
    # every case sits on a boundary where a drifted copy (<= for <, no cap, no growth check,
    # the clamp in the other order) gives another walltime, count or end.
    cols = list(zip(*RULE_CASES, strict=True))
    body = RULES.format(pred=", ".join(map(repr, cols[0])), step=", ".join(map(repr, cols[1])))
    n = len(RULE_CASES)
    trace = make_trace(submit=np.zeros(n), run=np.array(cols[3]), procs=np.ones(n, dtype=int),
                       req_time=np.array(cols[2]))  # fmt: skip
    out = [
        simulate_plugin(
            trace, load_plugin(_plugin(tmp_path, body, name)), Cluster(n), max_walltime=10_000.0
        )
        for name in ("Py", "Nb")
    ]
    assert _same(*out)
    s = out[0]
    assert s.prediction.tolist() == list(cols[4])
    assert s.walltime.tolist() == list(cols[5])
    assert s.corrections.tolist() == list(cols[6])
    assert s.killed.astype(int).tolist() == list(cols[7])
    assert (s.end - s.start).tolist() == list(cols[8])
