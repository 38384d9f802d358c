"""Walltime predictors: what the scheduler believes a job will take when it is submitted.

``request``
    The user's requested time (the "user estimate").
``constant``
    A fixed 10 minutes (the COARE paper's default prediction for correction-only policies),
    never above the request.
``exact``
    Clairvoyant: the job's actual run time (capped at the request, where user-estimate would
    kill it). Not a policy a site can run: a diagnostic, the schedule with perfect walltimes,
    against which the room left for any predictor or correction is measured.
``ave2``
    EASY++ (Tsafrir, Etsion & Feitelson 2007): the average run time of the user's last two
    *completed* jobs, never above the request; the request until the user has two. Computed
    inside the compiled scheduler, at each job's arrival.
``adaboost``
    AdaBoost regression (scikit-learn, decision trees) on user, processors, requested memory
    and requested time, predicting log(1 + run time). Trained online: the simulation pauses
    every ``retrain_every`` completions, the model is refitted on the jobs completed so far
    (the most recent ``window``) and predicts only the jobs not yet submitted; until
    ``min_samples`` jobs have completed the request is used.

Every prediction is at least 1 s and at most the job's request.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.ensemble import AdaBoostRegressor
from sklearn.tree import DecisionTreeRegressor

from grapeshot.jobs.rules import clamp_predictions
from grapeshot.jobs.scheduler import PRED_AVE2, PRED_GIVEN
from grapeshot.jobs.trace import JobTrace

CONSTANT_PREDICTION_S = 600.0


@dataclass
class Predictor:
    """A predictor by name, with the parameters of the online learner.

    Attributes
    ----------
    name
        One of :data:`PREDICTORS`.
    seed
        Seed of the learner (AdaBoost's tree randomisation).
    retrain_every
        Completions between refits (adaboost); None picks ``max(50, n // 40)``.
    window
        Most recent completed jobs used for a refit.
    min_samples
        Completed jobs needed before the first fit.
    n_estimators, max_depth
        AdaBoost's trees.
    """

    name: str
    seed: int = 0
    retrain_every: int | None = None
    window: int = 4000
    min_samples: int = 20
    n_estimators: int = 20
    max_depth: int = 6

    @property
    def kernel_mode(self) -> int:
        """How the compiled kernel gets predictions: computed inside (AVE2) or given."""
        return PRED_AVE2 if self.name == "ave2" else PRED_GIVEN

    @property
    def online(self) -> bool:
        """Whether the predictor is refitted during the simulation."""
        return self.name == "adaboost"

    def initial(self, trace: JobTrace) -> np.ndarray:
        """Predictions known before any job completes, seconds, shape ``(n,)``."""
        req = np.asarray(trace.req_time, dtype=np.float64)
        if self.name == "constant":
            pred = np.full(len(req), CONSTANT_PREDICTION_S)
        elif self.name == "exact":
            pred = np.maximum(np.asarray(trace.run, dtype=np.float64), 0.0)
        else:  # request, and the fallback of ave2 / adaboost
            pred = req
        return clamp_predictions(pred, req)

    def refit_every(self, n: int) -> int:
        """Completions between refits for a trace of ``n`` jobs."""
        return self.retrain_every if self.retrain_every is not None else max(50, n // 40)

    def refit_and_predict(
        self, trace: JobTrace, done: np.ndarray, runtime: np.ndarray, todo: np.ndarray
    ) -> np.ndarray | None:
        """Fit on completed jobs ``done`` (their executed ``runtime``, s), predict ``todo``.

        Returns None while fewer than ``min_samples`` jobs have completed.
        """
        if len(done) < self.min_samples or len(todo) == 0:
            return None
        done = done[-self.window :]
        y = np.log1p(np.maximum(runtime[-self.window :], 0.0))
        x = features(trace)
        model = AdaBoostRegressor(
            estimator=DecisionTreeRegressor(max_depth=self.max_depth, random_state=self.seed),
            n_estimators=self.n_estimators,
            loss="linear",
            random_state=self.seed,
        )
        model.fit(x[done], y)
        pred = np.expm1(model.predict(x[todo]))
        return clamp_predictions(pred, np.asarray(trace.req_time[todo], dtype=np.float64))


PREDICTORS: tuple[str, ...] = ("request", "constant", "exact", "ave2", "adaboost")


def features(trace: JobTrace) -> np.ndarray:
    """Regression features per job: user, processors, requested memory (KB), requested time."""
    return np.column_stack(
        [
            trace.user.astype(np.float64),
            trace.procs.astype(np.float64),
            trace.req_mem.astype(np.float64),
            trace.req_time.astype(np.float64),
        ]
    )


def make_predictor(name: str, *, seed: int = 0) -> Predictor:
    """The predictor called ``name``; ValueError listing the valid names otherwise."""
    if name not in PREDICTORS:
        raise ValueError(f"unknown predictor {name!r}; expected one of {', '.join(PREDICTORS)}")
    return Predictor(name, seed=seed)
