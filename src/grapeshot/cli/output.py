"""How every command speaks: a rich view for people, ``--json`` for scripts, one-line errors."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console

from grapeshot.model.json_text import json_text

console = Console()
err_console = Console(stderr=True)

#: The extensions of the figures grapeshot writes (``--figure``): the format follows from it.
FIGURE_SUFFIXES = (".png", ".svg")


def emit_json(payload: dict[str, Any]) -> None:
    """Print ``payload`` as one standard JSON document on standard output
    (:func:`grapeshot.model.json_text.json_text`: a NaN or an infinity as ``null``)."""
    sys.stdout.write(json_text(payload) + "\n")
    sys.stdout.flush()


def warn(command: str, message: str) -> None:
    """One line on standard error: ``grapeshot COMMAND: warning: MESSAGE`` (also under --json)."""
    sys.stderr.write(f"grapeshot {command}: warning: {message}\n")
    sys.stderr.flush()


class Stages:
    """What a long command is doing, stage by stage: a spinner with the stage's name and the
    time it has taken, on standard error, only on a terminal (never with ``--json``, never
    in a pipe or a log file). ``with Stages(quiet) as stage: stage("placing")``.

    For work that reports no finer progress (building a workload of millions of partitions,
    placing it, measuring it: minutes at the largest sizes that fit), so a user sees which
    stage is running rather than a silent terminal.
    """

    def __init__(self, quiet: bool) -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
            console=err_console, transient=True,
            disable=quiet or not err_console.is_terminal,
        )  # fmt: skip
        self._task: Any = None

    def __enter__(self) -> Stages:
        self._bar.__enter__()
        return self

    def __call__(self, description: str) -> None:
        """Start the stage ``description`` (the previous one is over)."""
        if self._task is not None:
            self._bar.remove_task(self._task)
        self._task = self._bar.add_task(description, total=None)

    def __exit__(self, *exc: object) -> None:
        self._bar.__exit__(None, None, None)
