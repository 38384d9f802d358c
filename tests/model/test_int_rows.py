"""The compiled writer of integer rows writes the bytes Python's ``str`` and a join write."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.model.int_rows import format_int_rows
from tests.fuzz import fuzz

INT64 = st.integers(-(2**63), 2**63 - 1)


def _bytes(values: np.ndarray, sep: bytes, end: bytes) -> bytes:
    u8 = np.uint8
    return bytes(format_int_rows(values, np.frombuffer(sep, u8), np.frombuffer(end, u8)))


@fuzz(0.5)
@given(
    st.integers(1, 3).flatmap(lambda w: st.lists(st.lists(INT64, min_size=w, max_size=w))),
    st.sampled_from([b",", b", ", b""]),
    st.sampled_from([b"\n", b", ", b"\r\n"]),
)
def test_fuzz_rows_are_written_as_str_writes_them(rows, sep, end) -> None:
    width = len(rows[0]) if rows else 1
    values = np.array(rows, dtype=np.int64).reshape(len(rows), width).T
    want = b"".join(sep.join(str(v).encode() for v in row) + end for row in rows)
    assert _bytes(values, sep, end) == want


@pytest.mark.parametrize("value", [0, -1, 9, 10, -10, 2**63 - 1, -(2**63), 10**18, -(10**17)])
def test_edges(value: int) -> None:
    assert _bytes(np.array([[value, 7]], dtype=np.int64), b",", b"\n") == f"{value}\n7\n".encode()
