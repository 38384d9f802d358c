"""The registry of static placement strategies, selected by name (STYLE 5).

A static strategy decides every partition's node once, before the run, from the partition
grid and the machine's cores alone. Every one has the signature of :class:`StaticStrategy`,
gives node ``k`` exactly ``quotas(P, cores)[k]`` partitions, and passes the conformance suite
in ``tests/place/test_conformance.py``; adding a strategy is adding an entry here.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Protocol

import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.model.seed import SeedLike
from grapeshot.place.birdshot import SHUFFLES, place_birdshot
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


#: The options a strategy takes after its name, ``NAME:key=value``: key → accepted values.
#: ``birdshot:shuffle=numpy`` asks for Birdshot's former slot-list shuffle at every size
#: (``docs/placement.md`` says which versions give which placements).
STRATEGY_OPTIONS: dict[str, dict[str, tuple[str, ...]]] = {"birdshot": {"shuffle": SHUFFLES}}


def is_static(spec: str) -> bool:
    """Whether ``spec`` names a static strategy (before any ``:options``; they are checked by
    :func:`parse_strategy`)."""
    return str(spec).partition(":")[0].strip() in STATIC_STRATEGIES


def parse_strategy(spec: str, option: str = "--strategy") -> tuple[str, dict[str, str]]:
    """Split a static strategy's ``NAME[:key=value,...]`` into its name and options.

    ``option`` is what errors name as holding the spec (the command-line option).

    Raises
    ------
    InputError
        On an unknown name, a malformed item, an option the strategy does not take or a value
        it does not accept; the message names the option and lists what is valid.
    """
    name, colon, rest = str(spec).partition(":")
    name = name.strip()
    if not is_static(name):
        valid = ", ".join(STATIC_STRATEGIES)
        raise InputError(option, f"unknown strategy {name!r}", f"one of: {valid}")
    takes = STRATEGY_OPTIONS.get(name, {})
    options: dict[str, str] = {}
    for item in filter(None, (piece.strip() for piece in rest.split(","))):
        key, eq, value = (x.strip() for x in item.partition("="))
        if not eq:
            raise InputError(f"{option} {name}", f"item {item!r}", "key=value")
        if key not in takes:
            expected = f"one of: {', '.join(takes)}" if takes else "no options for this strategy"
            raise InputError(f"{option} {name}", f"unknown option {key!r}", expected)
        if value not in takes[key]:
            raise InputError(
                f"{option} {name}: {key}", f"got {value!r}", f"one of: {', '.join(takes[key])}"
            )
        options[key] = value
    if colon and not options:
        raise InputError(f"{option} {spec}", "nothing after ':'", f"{name}:key=value")
    return name, options


def get_static_strategy(name: str | StaticStrategy, option: str = "--strategy") -> StaticStrategy:
    """Return the static strategy registered as ``name``, with its options if any.

    Parameters
    ----------
    name
        A key of :data:`STATIC_STRATEGIES`, optionally followed by options as
        :data:`STRATEGY_OPTIONS` lists them (``"birdshot:shuffle=numpy"``), or a strategy
        function itself (returned as is), such as :func:`fixed_strategy` of a placement read
        from a file.
    option
        The command-line option errors name.

    Raises
    ------
    InputError
        If no strategy has that name, or an option is wrong (:func:`parse_strategy`); the
        message lists the valid ones.
    """
    if callable(name):
        return name
    if not isinstance(name, str):
        valid = ", ".join(STATIC_STRATEGIES)
        raise InputError(option, f"unknown strategy {name!r}", f"one of: {valid}")
    base, options = parse_strategy(name, option)
    fn = STATIC_STRATEGIES[base]
    return partial(fn, **options) if options else fn


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
