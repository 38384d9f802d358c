"""Repro entries of Birdshot (000) §7.3: figures 12-14, dynamic load balancing."""

from __future__ import annotations

from grapeshot.report.repro_result import ReproEntry

ENTRIES: tuple[ReproEntry, ...] = ()
