"""The one reader of a user's .npy header (placements and exchange patterns read through it)."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.npy_header import read_npy_header


def _npy(header: bytes, version: bytes = b"\x01\x00") -> io.BytesIO:
    header = header + b" " * (118 - len(header)) + b"\n"
    return io.BytesIO(b"\x93NUMPY" + version + len(header).to_bytes(2, "little") + header)


def test_a_good_header_is_read_and_the_file_left_at_its_data() -> None:
    fh = io.BytesIO()
    np.save(fh, np.arange(6, dtype=np.int32).reshape(2, 3))
    fh.seek(0)
    shape, fortran, dtype = read_npy_header(fh, "p.npy", "an array")
    assert (shape, fortran, dtype) == ((2, 3), False, np.dtype(np.int32))
    assert np.array_equal(np.frombuffer(fh.read(), np.int32), np.arange(6))


@pytest.mark.parametrize(
    ("fh", "problem"),
    [
        (io.BytesIO(b"PK\x03\x04 not numpy"), "is not a .npy file"),
        (_npy(b"{}", b"\x03\x00"), "is .npy version (3, 0)"),
        (_npy(b"{'descr': '<i8', 'fortran_order': False, 'shape': (3,), '\\g': 1}"), "damaged"),
        (_npy(b"{'descr': '<i8', 'shape': (3,"), "damaged"),
    ],
)
def test_a_bad_header_is_refused_by_name_without_a_warning(fh: io.BytesIO, problem: str) -> None:
    # An escape like '\g' in a damaged header made numpy's ast warn on the user's terminal.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InputError) as err:
            read_npy_header(fh, "p.npy", "an array")
    assert str(err.value).startswith("p.npy: ") and problem in str(err.value)
    assert [str(w.message) for w in caught] == []
