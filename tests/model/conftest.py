"""Fixtures shared by the tests of the model's files."""

from __future__ import annotations

import pytest

from grapeshot.model import csv_table, placement


@pytest.fixture(params=["general", "scanner"])
def reader(request, monkeypatch) -> str:
    """Read the text files of a test by the general reader, then with every file offered to
    the compiled scanners first (as files of a megabyte and more are: rows of integers,
    a JSON placement's lists)."""
    if request.param == "scanner":
        monkeypatch.setattr(csv_table, "PLAIN_MIN_BYTES", 0)
        monkeypatch.setattr(placement, "JSON_SCAN_MIN_BYTES", 0)
    return request.param
