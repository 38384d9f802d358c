"""The registry of static placement strategies, selected by name (STYLE 5).

A static strategy decides every partition's node once, before the run, from the partition
grid and the machine's cores alone. Every one has the signature of :class:`StaticStrategy`,
gives node ``k`` exactly ``quotas(P, cores)[k]`` partitions, and passes the conformance suite
in ``tests/place/test_conformance.py``; adding a strategy is adding an entry here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.model.seed import SeedLike
from grapeshot.place.birdshot import place_birdshot
from grapeshot.place.cyclic import place_cyclic
from grapeshot.place.geometric import place_geometric
from grapeshot.place.sfc import place_sfc


class StaticStrategy(Protocol):
    """``fn(parts_shape, cores, *, seed) -> node_of``, int32 of shape ``(prod(parts_shape),)``."""

    def __call__(
        self, parts_shape: tuple[int, ...], cores: Sequence[int] | np.ndarray, *, seed: SeedLike
    ) -> np.ndarray: ...


#: Name → strategy. ``geometric``: one contiguous region per node by recursive coordinate
#: bisection; ``cyclic``: round robin over flat ids; ``sfc``: contiguous runs of a Hilbert
#: curve; ``birdshot``: Birdshot's random placement with exact per-node quotas.
STATIC_STRATEGIES: dict[str, StaticStrategy] = {
    "geometric": place_geometric,
    "cyclic": place_cyclic,
    "sfc": place_sfc,
    "birdshot": place_birdshot,
}


def get_static_strategy(name: str | StaticStrategy) -> StaticStrategy:
    """Return the static strategy registered as ``name``.

    Parameters
    ----------
    name
        A key of :data:`STATIC_STRATEGIES`, or a strategy function itself (returned as is),
        such as :func:`fixed_strategy` of a placement read from a file.

    Raises
    ------
    InputError
        If no strategy has that name; the message lists the valid ones.
    """
    if callable(name):
        return name
    try:
        return STATIC_STRATEGIES[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name such as a list
        valid = ", ".join(STATIC_STRATEGIES)
        raise InputError("--strategy", f"unknown strategy {name!r}", f"one of: {valid}") from None


def fixed_strategy(node_of: np.ndarray) -> StaticStrategy:
    """A strategy that returns ``node_of`` (a placement decided before, e.g. read from a file).

    The caller checks ``node_of`` against the program's partitions and the nodes (or ranks)
    it will run on; the returned function checks the sizes again and refuses a mismatch.
    """
    fixed = np.asarray(node_of, dtype=np.int32)

    def place_fixed(
        parts_shape: tuple[int, ...], cores: Sequence[int] | np.ndarray, *, seed: SeedLike
    ) -> np.ndarray:
        n_parts = int(np.prod(parts_shape))
        if fixed.shape != (n_parts,) or (fixed.size and fixed.max() >= len(cores)):
            raise InputError(
                "--placement",
                f"places {fixed.size} partitions on {int(fixed.max(initial=-1)) + 1} nodes",
                f"{n_parts} partitions on at most {len(cores)} nodes",
            )
        return fixed.copy()

    return place_fixed
