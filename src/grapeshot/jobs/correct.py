"""Walltime corrections: how a running job's limit grows when it is about to be reached.

Every correction is a table of increments (seconds; the last one repeats). A correction fires
when a running job is within ``lead`` seconds (60 s) of its current walltime: the walltime
grows by the next increment, never beyond the job's hard limit (7 days for the corrective
policies, the user's request for user-estimate). The job is killed only when it reaches a
walltime that can no longer grow.

``simple``
    The COARE paper's algorithm 2: +1 h each time.
``power``
    The paper's power function: the i-th correction adds 15·2^(i−2) minutes, i = 2, 3, …
    (15 min, 30 min, 1 h, 2 h, …).
``ladder``
    EASY++'s incremental table (Tsafrir et al.; as in predictsim's ``tsafrir`` corrector):
    +1 min, 5 min, 15 min, 30 min, 1 h, 2 h, 5 h, 10 h, 20 h, 50 h, 100 h, then 100 h.
``none``
    No correction: the walltime is the prediction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: A correction fires when the job is this close to its walltime, seconds (algorithm 2).
LEAD_S = 60.0


@dataclass(frozen=True)
class Correction:
    """A correction rule: ``increments[i]`` is added at the (i+1)-th firing (last repeats)."""

    name: str
    increments: np.ndarray
    description: str

    def increment(self, i: np.ndarray | int) -> np.ndarray:
        """Seconds added at the (i+1)-th correction (``i`` = 0, 1, …), vectorised."""
        k = np.minimum(np.asarray(i), len(self.increments) - 1)
        return self.increments[k]


CORRECTIONS: dict[str, Correction] = {
    "none": Correction("none", np.zeros(0), "no correction"),
    "simple": Correction("simple", np.array([3600.0]), "+1 h whenever within 60 s of the limit"),
    "power": Correction(
        "power",
        900.0 * 2.0 ** np.arange(48),
        "+15·2^(i−2) min at the i-th correction, i = 2, 3, …",
    ),
    "ladder": Correction(
        "ladder",
        60.0 * np.array([1, 5, 15, 30, 60, 120, 300, 600, 1200, 3000, 6000], dtype=np.float64),
        "EASY++'s table: +1, 5, 15, 30 min, 1, 2, 5, 10, 20, 50, 100 h, then 100 h",
    ),
}


def get_correction(name: str) -> Correction:
    """The correction called ``name``; ValueError listing the valid names otherwise."""
    try:
        return CORRECTIONS[name]
    except KeyError:
        raise ValueError(
            f"unknown correction {name!r}; expected one of {', '.join(CORRECTIONS)}"
        ) from None


def ladder(start: float, runtime: float, correction: Correction) -> np.ndarray:
    """The walltimes a correction goes through until it covers ``runtime`` (figure 5).

    Parameters
    ----------
    start
        Walltime at iteration 0 (the prediction, the "headstart"), seconds.
    runtime
        The job's actual run time, seconds.
    correction
        ``simple`` or ``power`` (any rule with increments).

    Returns
    -------
    numpy.ndarray
        Walltimes at iterations 0, 1, …, the last one the first ``>= runtime``, seconds.
    """
    if start >= runtime:
        return np.array([float(start)])
    if len(correction.increments) == 0:
        raise ValueError(f"correction {correction.name!r} never grows a walltime")
    # Enough iterations to cover the gap even if only the smallest increment repeats.
    smallest = float(np.min(correction.increments))
    k = int(min(np.ceil((runtime - start) / smallest), 100_000)) + 1
    walls = start + np.concatenate(([0.0], np.cumsum(correction.increment(np.arange(k)))))
    last = int(np.argmax(walls >= runtime))
    return walls[: last + 1]
