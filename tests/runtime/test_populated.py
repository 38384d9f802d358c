"""Large fresh arrays mapped at once: zeros, writable, of the dtype asked, alive as long as
their views."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from grapeshot.runtime import populated


@pytest.mark.parametrize("count", [0, 10, populated.POPULATE_BYTES // 8 + 3])
@pytest.mark.parametrize("dtype", [np.float64, np.uint8, np.int32])
def test_zeros_are_zeros_of_the_dtype_and_writable(count: int, dtype) -> None:
    a = populated.zeros(count, dtype)
    assert a.shape == (count,) and a.dtype == np.dtype(dtype)
    assert a.flags.writeable and a.flags.c_contiguous and not a.any()
    a[:] = 7
    assert (a == 7).all()


def test_a_view_keeps_the_memory_after_its_array_is_gone() -> None:
    a = populated.zeros(populated.POPULATE_BYTES, np.float64)
    view = a[5:10].reshape(5, 1)
    view[:] = 3.0
    del a
    gc.collect()
    assert (view == 3.0).all()
