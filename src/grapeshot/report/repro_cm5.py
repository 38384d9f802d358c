"""Repro entries of Ranka & Wang, CM-5 all-to-many (002): tables 2, 4, 5, 6."""

from __future__ import annotations

from grapeshot.report.repro_result import ReproEntry

ENTRIES: tuple[ReproEntry, ...] = ()
