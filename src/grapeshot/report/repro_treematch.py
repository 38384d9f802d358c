"""Repro entries of TreeMatchLB (001): table 1, figures 6 and 8."""

from __future__ import annotations

from grapeshot.report.repro_result import ReproEntry

ENTRIES: tuple[ReproEntry, ...] = ()
