"""What a ``grapeshot repro`` entry returns: rows (paper beside ours), notes, numbers, a figure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt


@dataclass(frozen=True)
class ReproRow:
    """One point the paper reports: its value, ours (None where a side has no number)."""

    label: str
    paper: float | None
    ours: float | None
    unit: str = ""

    @property
    def ratio(self) -> float | None:
        """ours / paper, or None."""
        if self.paper is None or self.ours is None or self.paper == 0:
            return None
        return self.ours / self.paper


@dataclass
class ReproResult:
    """What an entry produced: rows to print, notes on differences, numbers, a figure."""

    name: str
    title: str
    rows: list[ReproRow]
    notes: list[str]
    data: dict[str, Any]
    figure: plt.Figure | None = None
    inputs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ReproEntry:
    """A registry entry."""

    name: str
    paper: str
    runs: str
    expected_time: str
    quick_time: str
    function: Callable[[bool], ReproResult]
