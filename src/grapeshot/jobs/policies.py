"""The walltime policies of the COARE paper's table 2 (plus EASY++'s own ladder), by name.

A policy is (predictor, correction, kill limit). ``user-estimate`` kills a job at its request
(so does the diagnostic ``clairvoyant``, whose walltime is the exact run time);
every corrective policy lets the correction extend the walltime up to 7 days (algorithm 2's
``0 <= t - s <= 604800``), except ``easy++-ladder`` which, like Tsafrir's EASY++, kills at
the user's request.
"""

from __future__ import annotations

from dataclasses import dataclass

from grapeshot.jobs.correct import get_correction
from grapeshot.jobs.predict import PREDICTORS


@dataclass(frozen=True)
class Policy:
    """A walltime policy.

    Attributes
    ----------
    name
        Registry name.
    predictor
        One of :data:`grapeshot.jobs.predict.PREDICTORS`.
    correction
        One of :data:`grapeshot.jobs.correct.CORRECTIONS`.
    kill
        ``"request"`` (killed at the user's requested time) or ``"hard"`` (at the site's hard
        limit, 7 days by default, which corrections may reach).
    """

    name: str
    predictor: str
    correction: str
    kill: str
    description: str


POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy("user-estimate", "request", "none", "request", "the user's request, killed there"),
        Policy("easy++-power", "ave2", "power", "hard", "EASY++ AVE2 prediction, power correction"),
        Policy(
            "easy++-simple", "ave2", "simple", "hard", "EASY++ AVE2 prediction, simple correction"
        ),
        Policy(
            "easy++-ladder",
            "ave2",
            "ladder",
            "request",
            "EASY++ as Tsafrir et al.: AVE2, the incremental ladder, killed at the request",
        ),
        Policy(
            "regression-power", "adaboost", "power", "hard", "AdaBoost prediction, power correction"
        ),
        Policy(
            "regression-simple",
            "adaboost",
            "simple",
            "hard",
            "AdaBoost prediction, simple correction",
        ),
        Policy("power", "constant", "power", "hard", "10 min, then power correction"),
        Policy("simple", "constant", "simple", "hard", "10 min, then simple correction"),
        Policy(
            "clairvoyant",
            "exact",
            "none",
            "request",
            "diagnostic, not in the paper: the scheduler knows every run time exactly",
        ),
    )
}

#: The seven policies of the paper's tables 4 and 5, in its order.
PAPER_POLICIES: tuple[str, ...] = (
    "user-estimate",
    "easy++-power",
    "easy++-simple",
    "regression-power",
    "regression-simple",
    "power",
    "simple",
)

for _p in POLICIES.values():  # the registry is consistent with the other two
    assert _p.predictor in PREDICTORS and get_correction(_p.correction)


def get_policy(name: str) -> Policy:
    """The policy called ``name``; ValueError listing the valid names otherwise."""
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(
            f"unknown policy {name!r}; expected one of {', '.join(POLICIES)}"
        ) from None
