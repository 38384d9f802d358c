"""The header of a user's ``.npy`` file, read without trusting it.

``np.load`` believes a header's shape (it may allocate exabytes) and numpy parses the header
with ``ast``: a damaged one raises whatever the damage makes (``ValueError``,
``SyntaxError``, ``tokenize.TokenError``, ...) and may warn about escape sequences on the
way. Every reader of a user's ``.npy`` (placements, exchange patterns) reads the header
here, then checks shape and dtype itself before it reads a byte of data.
"""

from __future__ import annotations

import warnings
from typing import BinaryIO

import numpy as np

from grapeshot.model.errors import InputError

#: The header versions grapeshot reads (numpy writes 1.0, and 2.0 for huge headers).
_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def read_npy_header(
    fh: BinaryIO, where: str, expected: str
) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Read the magic and header of the ``.npy`` file open in ``fh``, leaving ``fh`` at its data.

    Parameters
    ----------
    fh
        The file, opened in binary mode at its start.
    where, expected
        For the refusal: the file's name and what it should hold.

    Returns
    -------
    tuple
        ``(shape, fortran_order, dtype)`` as the header claims them (unchecked).

    Raises
    ------
    InputError
        Not a ``.npy`` file, a version other than 1.0 or 2.0, or a damaged header.
    """
    try:
        version = np.lib.format.read_magic(fh)
    except ValueError:
        raise InputError(where, "is not a .npy file", expected) from None
    if version not in _READERS:
        raise InputError(where, f"is .npy version {version}", "version 1.0 or 2.0")
    try:
        with warnings.catch_warnings():
            # A damaged header's escapes make ast warn (SyntaxWarning from Python 3.12).
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            shape, fortran, dtype = _READERS[version](fh)
    except Exception as exc:  # whatever numpy's ast and tokenize raise on the damage
        raise InputError(where, f"has a damaged .npy header ({exc})", expected) from None
    return shape, fortran, dtype
