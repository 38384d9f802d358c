"""Every random choice in grapeshot enters through :func:`as_generator`."""

from __future__ import annotations

import numpy as np

from grapeshot.model.errors import InputError

SeedLike = int | np.random.Generator | None


def as_generator(seed: SeedLike) -> np.random.Generator:
    """Normalise ``seed`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    seed
        A non-negative integer (same integer, same stream, bit for bit), or an existing
        ``Generator`` that is returned as is so callers can share one stream. ``None`` is
        refused: grapeshot has no hidden randomness.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise InputError("seed", f"got {seed!r}", "a non-negative integer")
    if seed < 0:
        raise InputError("seed", f"got {seed}", "a non-negative integer")
    return np.random.default_rng(int(seed))
