"""Shared helpers of the Z-Model tests."""

from __future__ import annotations

from pathlib import Path

import pytest

#: Beatnik's own 1-rank regression states (not part of the project; skipped when absent).
VIEWS = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "beatnik-views"


@pytest.fixture
def views_dir() -> Path:
    """The directory of Beatnik's views, or skip."""
    if not (VIEWS / "low_order").is_dir():
        pytest.skip(f"Beatnik's regression views not found under {VIEWS}")
    return VIEWS
