"""What the compiled scanners of integer text (placement and trace files) agree on: the bytes
they look for and the longest integer they take.

A module of its own, below the readers (:mod:`grapeshot.model.csv_table`) and the scanners
(:mod:`grapeshot.model.int_rows`, :mod:`grapeshot.model.json_ints`), so that each imports it
and none imports another for a constant.
"""

from __future__ import annotations

#: Longest run of digits of an integer: 18 digits always fit in int64.
MAX_DIGITS = 18

#: ASCII bytes, as numba compares them with a file's ``uint8`` buffer.
TAB, NL, CR, SPACE, COMMA, MINUS, ZERO, NINE = 9, 10, 13, 32, 44, 45, 48, 57
