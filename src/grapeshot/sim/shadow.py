"""Coarse shadow runs: the forecast of Speculative balancing ([SHQL18], spec §A6).

The shadow is the real application at a coarser resolution — for FLIP, the trace generator's
solver (:class:`grapeshot.apps.flip.FlipSim`) on the same scene with ``1/factor`` of the cells
per axis (8 in [SHQL18]; 2 for the small grids of a laptop, where 1/8 would leave fewer cells
than partitions) and the same partition grid. It is run once, ahead of time, and never reads
the fine trace: its forecast of a fine step's load is the fluid-cell count per partition of
the coarse step at the same *simulated time* (fluid-sim-lb keys placements by time, since
the two resolutions take different time steps). The fine run's times are themselves
forecast from the shadow: the fine CFL time step
``min(1/30, cfl·dx / (v_max + √(5·g·dx)))`` with the shadow's largest particle speed at that
time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from grapeshot.model.errors import InputError
from grapeshot.model.workload import Workload


@dataclass(frozen=True)
class Shadow:
    """A coarse run's record, ready to forecast fine steps.

    Attributes
    ----------
    fine_times
        float64, ``(S,)``: forecast simulated time at the start of each fine step.
    coarse_times
        float64, ``(K,)``: simulated time at the start of each coarse step.
    counts
        float64, ``(K, P)``: fluid cells per partition at the start of each coarse step,
        scaled to fine cells (× factor^d).
    """

    fine_times: np.ndarray
    coarse_times: np.ndarray
    counts: np.ndarray

    def predict(self, step: int, window: int) -> np.ndarray:
        """Forecast load ``(window, P)`` of fine steps ``step .. step + window - 1``."""
        steps = np.minimum(np.arange(step, step + window), self.fine_times.size - 1)
        t = self.fine_times[steps]
        k = np.searchsorted(self.coarse_times, t, side="right") - 1
        return self.counts[np.clip(k, 0, len(self.counts) - 1)]


def shadow_factor(domain_shape: tuple[int, ...], parts_shape: tuple[int, ...]) -> int:
    """8 where the coarse grid keeps at least one cell per partition per axis, else 2."""
    for factor in (8, 2):
        if all(
            n % factor == 0 and n // factor >= max(p, 8)
            for n, p in zip(domain_shape, parts_shape, strict=True)
        ):
            return factor
    raise InputError(
        "speculative shadow",
        f"cannot coarsen {domain_shape} cells over {parts_shape} partitions",
        "cells per axis divisible by 2 and at least twice the partitions (and 16)",
    )


@lru_cache(maxsize=8)
def _flip_shadow(
    scene: str, cells: tuple[int, ...], parts: tuple[int, ...], steps: int, factor: int
) -> Shadow:
    from grapeshot.apps.flip import CFL, FRAME, FlipSim

    coarse = tuple(n // factor for n in cells)
    sim = FlipSim(scene, coarse, parts=parts)
    gravity = sim.spec.gravity
    dx_fine = 1.0 / cells[0]
    times, speeds, counts = [], [], []
    fine_times = np.zeros(steps)
    t_fine = 0.0
    s = 0
    while s < steps:
        times.append(sim.time)
        speeds.append(math.sqrt(float(np.max(np.einsum("ij,ij->i", sim.vel, sim.vel)))))
        stats = sim.step()
        assert stats.fluid_per_part is not None
        counts.append(stats.fluid_per_part.astype(np.float64) * factor ** len(cells))
        # Fine steps that start before the coarse step's end take its speed.
        while s < steps and t_fine < sim.time:
            fine_times[s] = t_fine
            dt = min(FRAME, CFL * dx_fine / (speeds[-1] + math.sqrt(5.0 * gravity * dx_fine)))
            t_fine += dt
            s += 1
    return Shadow(fine_times, np.asarray(times), np.asarray(counts))


def coarse_shadow(workload: Workload, window: int) -> Shadow:
    """The coarse shadow of ``workload``'s app, covering its steps plus ``window``.

    Raises
    ------
    InputError
        If the trace's app has no coarse copy here (only FLIP traces have one).
    """
    if workload.app != "flip":
        raise InputError(
            "strategy 'speculative'",
            f"needs a coarse shadow run of the app; {workload.app or 'this'!r} traces have none",
            "a FLIP trace (grapeshot trace flip ...), whose solver runs coarse",
        )
    factor = shadow_factor(workload.domain_shape, workload.parts_shape)
    return _flip_shadow(
        workload.scene,
        workload.domain_shape,
        workload.parts_shape,
        workload.n_steps + window,
        factor,
    )
