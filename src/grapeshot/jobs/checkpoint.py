"""Checkpointing jobs: the model ``jobs simulate --checkpoint-cost/--checkpoint-seconds`` runs.

Every job writes a checkpoint after each ``every`` seconds of work, and each checkpoint takes
``cost`` seconds (no work is done meanwhile); none is written when its work is done. A job with
work ``R`` (the log's run time) therefore runs ``R + (ceil(R / every) - 1) * cost`` seconds.
A job killed at its walltime ``W`` keeps the work of the checkpoints it completed,
``every * floor(W / (every + cost))`` seconds (one being written at the kill is lost), and is
resubmitted at once with the rest, the walltime it was killed at (a requeued Slurm job keeps
its time limit) and no new prediction; it queues behind the jobs already waiting. A job killed
before its first checkpoint is killed for good, as without checkpointing. The arithmetic is
:func:`grapeshot.jobs.rules.checkpointed_wall` and :func:`grapeshot.jobs.rules.checkpoint_saved`;
the requeue is :func:`grapeshot.jobs.scheduler._requeue`.

A job's wait is then the time it spent queued over all its segments and its run time ``R`` in
the bounded slowdown the time it ran over all of them (checkpoints and lost work included):
``wait + R = end - submit``, as for a job that ran once.
"""

from __future__ import annotations

from dataclasses import dataclass

from grapeshot.model.errors import InputError, check_number, check_positive_number

#: Appended to a policy's name for its run with checkpointing jobs (``user-estimate+ckpt``).
SUFFIX = "+ckpt"


@dataclass(frozen=True)
class Checkpoint:
    """How jobs checkpoint (see the module).

    Attributes
    ----------
    every
        Seconds of work between checkpoints, > 0.
    cost
        Seconds each checkpoint takes, >= 0.
    """

    every: float
    cost: float

    def __post_init__(self) -> None:
        check_positive_number(self.every, "--checkpoint-seconds")
        check_number(
            self.cost, "--checkpoint-cost", low=0, high_open=True,
            expected="a finite number of seconds >= 0",
        )  # fmt: skip

    def as_dict(self) -> dict[str, float]:
        """Plain JSON-ready dict: ``every_s`` and ``cost_s``."""
        return {"every_s": float(self.every), "cost_s": float(self.cost)}


def checkpoint_of(cost: float | None, every: float | None) -> Checkpoint | None:
    """The :class:`Checkpoint` the two options describe, None if neither is given.

    Raises
    ------
    InputError
        If only one is given, or either is out of range (one line naming the option).
    """
    if cost is None and every is None:
        return None
    if cost is None or every is None:
        given, missing = (
            ("--checkpoint-cost", "--checkpoint-seconds")
            if every is None
            else ("--checkpoint-seconds", "--checkpoint-cost")
        )
        raise InputError(given, f"given without {missing}", f"both {given} and {missing} (seconds)")
    return Checkpoint(every, cost)
