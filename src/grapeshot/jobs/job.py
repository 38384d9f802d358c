"""What a walltime plug-in sees of one job: :class:`Job`, the record both plug-in paths build
(Python, :mod:`grapeshot.jobs.plugin`, and compiled, :mod:`grapeshot.jobs.plugin_compiled`)."""

from __future__ import annotations

from typing import NamedTuple


class Job(NamedTuple):
    """What a plug-in sees of one job (no run time).

    Attributes
    ----------
    index
        Position in the cleaned trace (submission order), 0 … n−1.
    job_id, user
        As in the log.
    procs
        Processors.
    submit
        Seconds from the log's start.
    request
        The walltime the user asked for (after COARE mode, at least 1 s), seconds.
    req_mem
        Requested memory per processor, KB (−1 if the log has none).
    user_index
        The user numbered 0 … n_users−1 (in the order of their ids), for a plug-in that
        keeps per-user state in an array.
    """

    index: int
    job_id: int
    user: int
    procs: int
    submit: float
    request: float
    req_mem: float
    user_index: int
