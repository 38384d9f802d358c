"""Synthetic workloads, named by a SPEC string ``KIND:key=value,...``.

Three kinds, each a model from the papers:

- ``binary``: Birdshot §5's binary model. A fraction ``busy`` of the partitions costs
  ``busy_cost`` seconds, the rest nothing; the busy set is redrawn every step
  (``mode=redraw``) or is a band of partition columns that moves one column a step
  (``mode=move``).
- ``uniform``: TreeMatchLB theorem 1's model. Every partition costs an independent
  Uniform[a, b] milliseconds every step.
- ``dambreak``: an analytic dam break. A column of water (``width`` × ``height`` of the
  domain) collapses along the floor (axis 0 is horizontal, axis 1 vertical, axis 2 depth),
  reaches the far wall half way through the run, and a wave then runs back across the floor.
  A partition costs ``cell_cost`` seconds per wet cell, plus ``floor`` seconds. Load varies
  in space and in time, the way Birdshot §3.1 describes.

``parse_spec("dambreak:parts=64x64,steps=200")`` gives ``("dambreak", {...})``;
:func:`synthetic_workload` builds the workload. :func:`describe_kinds` is what
``--synthetic help`` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from numba import njit

from grapeshot.model.errors import InputError
from grapeshot.model.memory import check_memory, synthetic_bytes
from grapeshot.model.seed import as_generator
from grapeshot.model.workload import Workload, check_grid, grid_halo, partition_bounds

GRAVITY = 9.81  # m/s², for the dam break's time scale
#: Largest ``cell_bytes`` (1 GiB a ghost cell): halo messages of any grid that fits in memory
#: then stay within int64.
MAX_CELL_BYTES = 1 << 30
#: Largest cost a key may give (seconds or milliseconds a partition, a wet cell): any larger
#: one is a typo, and sums over every partition and step of a grid that fits in memory stay
#: far within float64 (no LIF of inf / inf).
MAX_COST = 1e12


@dataclass(frozen=True)
class Key:
    """One SPEC key: its parser, default and a line of help."""

    parse: Callable[[str], Any]
    default: Any
    help: str


def _sizes(text: str) -> list[str]:
    # 48x48 and 48,48 alike, as --parts and --cells take them.
    return text.lower().replace(",", "x").split("x")


def _shape(text: str) -> tuple[int, ...]:
    parts = tuple(int(x) for x in _sizes(text))
    if len(parts) not in (2, 3) or min(parts) < 1:
        raise ValueError(text)
    return parts


def _cells(text: str) -> tuple[int, ...]:
    parts = tuple(int(x) for x in _sizes(text))
    if len(parts) not in (1, 2, 3) or min(parts) < 1:
        raise ValueError(text)
    return parts


def _pos_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _cell_bytes(text: str) -> int:
    # Bounded so a partition's halo bytes (ghost cells x cell_bytes) stay within int64.
    value = _pos_int(text)
    if value > MAX_CELL_BYTES:
        raise ValueError(text)
    return value


def _nonneg_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 < value <= 1.0:
        raise ValueError(text)
    return value


def _nonneg(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= MAX_COST:
        raise ValueError(text)
    return value


def _mode(text: str) -> str:
    if text not in ("redraw", "move"):
        raise ValueError(text)
    return text


_EXPECTED = {
    _shape: "2 or 3 positive integers joined by 'x' or ',', e.g. 64x64",
    _cells: "1 to 3 positive integers joined by 'x' or ',', e.g. 16 or 16x8",
    _pos_int: "an integer >= 1",
    _cell_bytes: f"an integer in [1, {MAX_CELL_BYTES}]",
    _nonneg_int: "an integer >= 0",
    _fraction: "a number in (0, 1]",
    _nonneg: f"a number in [0, {MAX_COST:.0e}]",
    _mode: "redraw or move",
}

_COMMON = {
    "parts": Key(_shape, (64, 64), "partitions per axis, e.g. 64x64 or 16x8x16"),
    "cells": Key(_cells, (16,), "cells per partition per axis (one value for all axes)"),
    "steps": Key(_pos_int, 10, "number of steps"),
    "seed": Key(_nonneg_int, 0, "seed of the random draws"),
    "ghost": Key(_pos_int, 1, "ghost layer width, cells"),
    "cell_bytes": Key(_cell_bytes, 8, "bytes exchanged per ghost cell"),
}


def _binary(p: dict[str, Any], domain: tuple[int, ...]) -> np.ndarray:
    rng = as_generator(p["seed"])
    shape, steps = p["parts"], p["steps"]
    n = int(np.prod(shape))
    n_busy = max(1, round(p["busy"] * n))
    cost = np.zeros((steps, n))
    if p["mode"] == "redraw":
        for t in range(steps):
            cost[t, rng.choice(n, size=n_busy, replace=False)] = p["busy_cost"]
        return cost
    # A band of whole columns along axis 0 (wrapping), busy fraction as close as columns allow.
    cols = shape[0]
    width = max(1, round(p["busy"] * cols))
    start = int(rng.integers(cols))
    column_of = np.indices(shape).reshape(len(shape), -1)[0]
    for t in range(steps):
        band = (column_of - start - t) % cols < width
        cost[t, band] = p["busy_cost"]
    return cost


def _uniform(p: dict[str, Any], domain: tuple[int, ...]) -> np.ndarray:
    if p["b"] < p["a"]:
        raise InputError("--synthetic uniform: b", f"got {p['b']} < a = {p['a']}", "b >= a")
    rng = as_generator(p["seed"])
    n = int(np.prod(p["parts"]))
    return rng.uniform(p["a"], p["b"], size=(p["steps"], n)) * 1e-3


def _dam_depth(x: np.ndarray, tau: float, width: float, height: float) -> np.ndarray:
    """Water depth (fraction of the domain height) at ``x`` for run fraction ``tau``.

    First half: Ritter's dry-bed dam break of a reservoir ``width`` long and ``height``
    deep, timed so the front reaches the far wall (x = 1) at ``tau = 1/2``; once the
    rarefaction has reflected off the near wall the profile is rescaled to keep the volume.
    Second half: the settled layer plus a wave running back from the far wall to the near
    one. Volume (``width * height``) is conserved throughout.
    """
    volume = width * height
    if tau <= 0.5:
        c0 = np.sqrt(GRAVITY * height)
        t = (tau / 0.5) * (1.0 - width) / (2.0 * c0)
        if t == 0.0:
            return np.where(x < width, height, 0.0)
        xi = (x - width) / t
        depth = np.where(
            xi <= -c0,
            height,
            np.where(xi < 2.0 * c0, (2.0 * c0 - xi) ** 2 / (9.0 * GRAVITY), 0.0),
        )
    else:
        centre = 1.0 - (tau - 0.5) / 0.5
        bump = np.exp(-(((x - centre) / 0.08) ** 2))
        depth = 0.5 * volume + bump
    # Ritter's reservoir is infinite and the wave's tail leaves the domain: rescale so the
    # volume stays that of the initial column.
    if not depth.mean() > 0.0:  # a column thinner than a cell (or than float's range): dry
        return np.zeros_like(x)
    return np.minimum(depth * (volume / depth.mean()), 1.0)


def _dambreak(p: dict[str, Any], domain: tuple[int, ...]) -> np.ndarray:
    shape, steps = p["parts"], p["steps"]
    bounds = partition_bounds(domain, shape)
    nx, ny = domain[0], domain[1]
    x = (np.arange(nx) + 0.5) / nx
    y_lo = bounds[1][:-1].astype(float)
    y_size = np.diff(bounds[1]).astype(float)
    depth_axis = np.diff(bounds[2]).astype(float) if len(shape) == 3 else np.ones(1)
    cost = np.empty((steps, int(np.prod(shape))))
    per_xy = np.empty((shape[0], shape[1]))
    x_lo = np.ascontiguousarray(bounds[0], dtype=np.int64)
    for t in range(steps):
        tau = t / max(steps - 1, 1)
        h_cells = _dam_depth(x, tau, p["width"], p["height"]) * ny
        # Wet cells of each x-column inside each y-partition, summed over the columns of each
        # x-partition (in column order, as np.add.reduceat of the clipped matrix did).
        _wet_per_part(h_cells, x_lo, y_lo, y_size, per_xy)
        _cost_row(per_xy, depth_axis, float(p["cell_cost"]), float(p["floor"]), cost[t])
    return cost


@njit(cache=True)
def _cost_row(per_xy, depth_axis, cell_cost, floor, row):
    """``row[(i * ny + j) * nz + k] = per_xy[i, j] * depth_axis[k] * cell_cost + floor``: the
    same three roundings as the numpy expression, in one pass without its two temporaries."""
    nz = depth_axis.shape[0]
    for i in range(per_xy.shape[0]):
        for j in range(per_xy.shape[1]):
            base = (i * per_xy.shape[1] + j) * nz
            for k in range(nz):
                row[base + k] = per_xy[i, j] * depth_axis[k] * cell_cost + floor


@njit(cache=True, inline="always")
def _wet(h: float, lo: float, size: float) -> float:
    """``np.clip(h - lo, 0, size)``: the wet cells of a column of water ``h`` cells deep in a
    partition of ``size`` cells starting at row ``lo``."""
    w = h - lo
    if w < 0.0:
        w = 0.0
    if w > size:
        w = size
    return w


@njit(cache=True)
def _pairwise_wet(h_cells, a: int, n: int, lo: float, size: float) -> float:
    """numpy's pairwise sum (``pairwise_sum`` of ``loops_utils.h``, blocks of 128 unrolled by
    8) of ``_wet(h_cells[x], lo, size)`` over the ``n`` columns ``x = a .. a + n - 1``."""
    if n < 8:
        res = 0.0
        for x in range(a, a + n):
            res += _wet(h_cells[x], lo, size)
        return res
    if n <= 128:
        r0 = _wet(h_cells[a], lo, size)
        r1 = _wet(h_cells[a + 1], lo, size)
        r2 = _wet(h_cells[a + 2], lo, size)
        r3 = _wet(h_cells[a + 3], lo, size)
        r4 = _wet(h_cells[a + 4], lo, size)
        r5 = _wet(h_cells[a + 5], lo, size)
        r6 = _wet(h_cells[a + 6], lo, size)
        r7 = _wet(h_cells[a + 7], lo, size)
        i = 8
        while i + 8 <= n:
            x = a + i
            r0 += _wet(h_cells[x], lo, size)
            r1 += _wet(h_cells[x + 1], lo, size)
            r2 += _wet(h_cells[x + 2], lo, size)
            r3 += _wet(h_cells[x + 3], lo, size)
            r4 += _wet(h_cells[x + 4], lo, size)
            r5 += _wet(h_cells[x + 5], lo, size)
            r6 += _wet(h_cells[x + 6], lo, size)
            r7 += _wet(h_cells[x + 7], lo, size)
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += _wet(h_cells[a + i], lo, size)
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise_wet(h_cells, a, n2, lo, size) + _pairwise_wet(
        h_cells, a + n2, n - n2, lo, size
    )


@njit(cache=True)
def _wet_per_part(h_cells, x_lo, y_lo, y_size, out):
    """``out[i, j]``: the wet cells of x-partition ``i`` (columns ``x_lo[i] .. x_lo[i+1]-1``)
    inside y-partition ``j``, ``Σ_x clip(h_cells[x] - y_lo[j], 0, y_size[j])``.

    The sums ``np.add.reduceat(np.clip(h[:, None] - y_lo, 0, y_size), x_lo[:-1], axis=0)``
    gives, bit for bit, without its columns × partitions matrix (537 MB a step for 2048 ×
    2048 partitions of 16 × 16 cells): numpy adds a segment's first row to the pairwise sum
    of the others (``tests/sim/test_large_setup.py`` checks the two agree).
    """
    for i in range(out.shape[0]):
        a = x_lo[i]
        n = x_lo[i + 1] - a
        h_min = h_cells[a]
        h_max = h_cells[a]
        for x in range(a + 1, a + n):
            h_min = min(h_min, h_cells[x])
            h_max = max(h_max, h_cells[x])
        for j in range(out.shape[1]):
            # Most partitions are all dry or all under water: every term is 0.0, or every
            # term is y_size[j], a whole number of cells, whose sums are exact in any order.
            if h_max <= y_lo[j]:
                out[i, j] = 0.0
                continue
            if h_min - y_lo[j] >= y_size[j]:
                out[i, j] = n * y_size[j]
                continue
            first = _wet(h_cells[a], y_lo[j], y_size[j])
            if n == 1:
                out[i, j] = first
            else:
                out[i, j] = first + _pairwise_wet(h_cells, a + 1, n - 1, y_lo[j], y_size[j])


@dataclass(frozen=True)
class Kind:
    """A synthetic workload kind: its generator, keys and one line of description."""

    build: Callable[[dict[str, Any], tuple[int, ...]], np.ndarray]
    keys: Mapping[str, Key]
    about: str
    units: str = "s"


KINDS: Mapping[str, Kind] = MappingProxyType(
    {
        "binary": Kind(
            _binary,
            {
                **_COMMON,
                "busy": Key(_fraction, 0.6, "fraction p of busy partitions"),
                "busy_cost": Key(_nonneg, 0.01, "seconds a busy partition costs"),
                "mode": Key(_mode, "redraw", "redraw: new busy set each step; move: a band"),
            },
            "Birdshot §5 binary model: a fraction of partitions busy, the rest idle",
        ),
        "uniform": Kind(
            _uniform,
            {
                **_COMMON,
                "a": Key(_nonneg, 50.0, "lowest cost, milliseconds"),
                "b": Key(_nonneg, 100.0, "highest cost, milliseconds"),
            },
            "TreeMatchLB theorem 1: i.i.d. Uniform[a, b] ms per partition per step",
        ),
        "dambreak": Kind(
            _dambreak,
            {
                **_COMMON,
                "steps": Key(_pos_int, 200, "number of steps"),
                "width": Key(_fraction, 0.25, "initial column width, fraction of the domain"),
                "height": Key(_fraction, 0.8, "initial column height, fraction of the domain"),
                "cell_cost": Key(_nonneg, 1e-6, "seconds per wet cell per step"),
                "floor": Key(_nonneg, 0.0, "seconds every partition costs per step"),
            },
            "analytic dam break: a water column collapses and sweeps across the floor",
        ),
    }
)


def describe_kinds() -> str:
    """Human-readable list of the kinds and their keys (what ``--synthetic help`` prints)."""
    lines = ["SPEC is KIND:key=value,...  e.g. dambreak:parts=64x64,steps=200", ""]
    for name, kind in KINDS.items():
        lines.append(f"{name}: {kind.about}")
        for key, spec in kind.keys.items():
            default = spec.default
            if isinstance(default, tuple):
                default = "x".join(str(d) for d in default)
            lines.append(f"  {key:<11} {spec.help} (default {default})")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _items(rest: str) -> list[str]:
    """``"parts=48,48,steps=5"`` → ``["parts=48,48", "steps=5"]``: a bare number after a
    comma continues the value before it (a grid written with commas, as ``--parts`` takes)."""
    items: list[str] = []
    for piece in filter(None, (s.strip() for s in rest.split(","))):
        if "=" not in piece and items and piece.isdigit():
            items[-1] += "," + piece
        else:
            items.append(piece)
    return items


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``KIND:key=value,...`` into the kind and its full, validated parameters."""
    kind_name, _, rest = spec.partition(":")
    kind_name = kind_name.strip()
    if kind_name not in KINDS:
        raise InputError(
            "--synthetic", f"unknown kind {kind_name!r}", f"one of {', '.join(KINDS)} (or help)"
        )
    kind = KINDS[kind_name]
    params = {key: k.default for key, k in kind.keys.items()}
    for item in _items(rest):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            raise InputError(f"--synthetic {kind_name}", f"item {item!r}", "key=value")
        if key not in kind.keys:
            raise InputError(
                f"--synthetic {kind_name}", f"unknown key {key!r}", f"one of {', '.join(kind.keys)}"
            )
        parser = kind.keys[key].parse
        try:
            params[key] = parser(value.strip())
        except ValueError:
            raise InputError(
                f"--synthetic {kind_name}: {key}", f"got {value!r}", _EXPECTED[parser]
            ) from None
    return kind_name, params


def synthetic_workload(spec: str) -> Workload:
    """Build the workload a SPEC names (see the module docstring and :func:`describe_kinds`)."""
    kind_name, params = parse_spec(spec)
    shape = params["parts"]
    cells = params["cells"]
    if len(cells) == 1:
        cells = cells * len(shape)
    if len(cells) != len(shape):
        raise InputError(
            f"--synthetic {kind_name}: cells", f"got {len(cells)} values", f"1 or {len(shape)}"
        )
    domain = tuple(k * c for k, c in zip(shape, cells, strict=True))
    check_grid(domain, shape, f"--synthetic {kind_name}: parts/cells")
    return build_synthetic(kind_name, params, domain, scene=spec)


def build_synthetic(
    kind_name: str, params: dict[str, Any], domain: tuple[int, ...], *, scene: str
) -> Workload:
    """The workload of validated ``params`` (partition grid ``params["parts"]``) over
    ``domain`` cells: the kind's costs and the stencil halo of its ``ghost`` and
    ``cell_bytes``.

    Raises
    ------
    InputError
        Naming the SPEC, before anything is allocated, if the workload needs more memory
        than the machine has available (:mod:`grapeshot.model.memory`).
    """
    shape = params["parts"]
    check_memory(
        synthetic_bytes(kind_name, shape, params["steps"], domain),
        f"--synthetic {scene}",
        "to build the workload",
        "fewer partitions (parts=) or steps (steps=)",
    )
    cost = KINDS[kind_name].build(params, domain)
    halo = grid_halo(domain, shape, ghost=params["ghost"], cell_bytes=params["cell_bytes"])
    return Workload(
        domain_shape=domain,
        parts_shape=shape,
        cost=cost,
        halo=halo,
        units=KINDS[kind_name].units,
        app="synthetic",
        scene=scene,
    )
