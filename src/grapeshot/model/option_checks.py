"""Checks of the options several commands share, and their library calls (``grapeshot.run``):
a grid's sizes (``--parts``, ``--cells``, ``--grid``) and a dynamic strategy's options given
to a static one. Each refusal is an :class:`~grapeshot.model.errors.InputError` naming the
option."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grapeshot.model.errors import InputError


def parse_sizes(text: str | int | Sequence[int], where: str) -> tuple[int, ...]:
    """``"8"``, ``"8,4"``, ``"8x4x2"`` (or, from Python, an int or a sequence of ints) →
    positive ints (1 to 3 of them).

    Raises
    ------
    InputError
        Naming ``where`` if ``text`` is not 1 to 3 positive integers.
    """
    expected = "1 to 3 positive integers separated by ',' or 'x', e.g. 8,8"
    if isinstance(text, str):
        try:
            sizes = tuple(int(x) for x in text.lower().replace("x", ",").split(","))
        except ValueError:
            raise InputError(where, f"got {text!r}", expected) from None
    else:
        values = (text,) if isinstance(text, int | np.integer) else text
        try:
            sizes = tuple(values)
        except TypeError:
            raise InputError(where, f"got {text!r}", expected) from None
        if not all(isinstance(s, int | np.integer) and not isinstance(s, bool) for s in sizes):
            raise InputError(where, f"got {text!r}", expected)
        sizes = tuple(int(s) for s in sizes)
    if not 1 <= len(sizes) <= 3 or min(sizes) < 1:
        raise InputError(where, f"got {text!r}", expected)
    return sizes


def parse_parts(text: str | int | Sequence[int]) -> tuple[int, ...]:
    """``--parts PX[,PY[,PZ]]``; one value means a square 2-D grid (``8`` → ``(8, 8)``)."""
    parts = parse_sizes(text, "--parts")
    return parts * 2 if len(parts) == 1 else parts


def parse_cells(text: str | int | Sequence[int] | None, ndim: int) -> tuple[int, ...] | None:
    """``--cells NX[,NY[,NZ]]`` for a ``ndim``-D grid; one value applies to every axis."""
    if text is None:
        return None
    cells = parse_sizes(text, "--cells")
    if len(cells) == 1:
        return cells * ndim
    if len(cells) != ndim:
        raise InputError(
            "--cells", f"got {len(cells)} values for {ndim}-D --parts", f"1 or {ndim} values"
        )
    return cells


def refuse_dynamic_options(strategy: str, given: dict[str, object]) -> None:
    """Refuse a dynamic strategy's option given with the static ``strategy`` (it would be
    ignored): one InputError naming the first such option."""
    for key in given:
        raise InputError(
            f"--{key}", f"given with the static strategy {strategy}",
            "a dynamic --strategy (docs/dynamic.md)",
        )  # fmt: skip
