"""Repro entries of Birdshot (000): figures 3, 4, 9, 10 and TreeMatchLB's theorem 1."""

from __future__ import annotations

from grapeshot.report.repro_result import ReproEntry

ENTRIES: tuple[ReproEntry, ...] = ()
