"""Set-up steps every rank takes on its own, ended together when one fails.

Each rank builds its own partitions and plans; one whose user code raises (an
``init_block`` that fails on one partition) would leave the others waiting for it in the next
collective for ever. :func:`agreed` ends the step with one small collective: every rank
learns whether any failed, and all raise the first failure's error, so the command line
prints one line (rank 0) and every rank exits together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from grapeshot.model.errors import GrapeshotError

if TYPE_CHECKING:
    from mpi4py import MPI

T = TypeVar("T")


class RankFailed(GrapeshotError):
    """Another rank's set-up failed; the message is its error, prefixed with its rank."""


def agreed(comm: MPI.Comm, build: Callable[[], T]) -> T:
    """``build()`` on every rank of ``comm``, collectively: its result, or on every rank the
    error of the lowest rank whose ``build`` raised a :class:`GrapeshotError`.

    On one rank the error is raised as it is; on more, every rank raises a
    :class:`RankFailed` of its words prefixed with ``rank R:``. Errors of other types are not
    caught (a failing rank then ends the job on its own:
    :func:`grapeshot.runtime.watch.abort_run`).
    """
    try:
        result, failure = build(), None
    except GrapeshotError as exc:
        result, failure = None, exc
    failures = comm.allgather(None if failure is None else str(failure))
    first = next((r for r, text in enumerate(failures) if text is not None), None)
    if first is None:
        return result  # type: ignore[return-value]
    if comm.Get_size() == 1 and failure is not None:
        raise failure
    raise RankFailed(f"rank {first}: {failures[first]}")
