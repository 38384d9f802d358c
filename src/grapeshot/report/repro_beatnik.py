"""Repro entries of Beatnik (003): figures 6-7, figure 9, Z-Model growth rates."""

from __future__ import annotations

from grapeshot.report.repro_result import ReproEntry

ENTRIES: tuple[ReproEntry, ...] = ()
