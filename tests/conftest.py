"""Shared fixtures: paths to the shared data, skipped cleanly where it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` beside the checkout; tests needing it skip where it is absent."""
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip("../shared/data is not present beside this checkout")
    return path
