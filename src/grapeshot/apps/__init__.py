"""The mini-apps: simulations whose per-partition cost comes from real physics.

Every app is a module of this package, registered in :data:`APPS`. A *runnable* app exports

- ``SCENES``: ``{scene name: one-line description}``
- ``make_program(scene, parts, *, cells=None, seed=0) -> Program``: the app written against
  :mod:`grapeshot.model.program`, for the serial executor, the MPI runtime and the simulator.
  ``parts`` is partitions per axis (2 or 3 values: the app's dimension follows from it);
  ``cells`` overrides the scene's default cells per axis.

A *trace generator* (an app whose global solve is out of scope for micro-partitioned
execution) exports ``SCENES`` and
``make_trace(scene, parts, steps, *, cells=None, seed=0, progress=None) -> Workload``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from grapeshot.model.errors import InputError


@dataclass(frozen=True)
class AppSpec:
    """One registered app."""

    module: str
    about: str
    runnable: bool


APPS: dict[str, AppSpec] = {
    "sph": AppSpec("sph", "weakly compressible SPH (PARSEC fluidanimate style), 2-D/3-D", True),
    "swe": AppSpec("swe", "finite-volume shallow water with wet/dry cells, 2-D", True),
    "wavefront": AppSpec(
        "wavefront", "fronts from point sources, work in the narrow band (Lassen style)", True
    ),
    "flip": AppSpec("flip", "FLIP water on a MAC grid with pressure projection (trace)", False),
    "commbench": AppSpec("commbench", "CommBench: chunks of real bytes to two random chares", True),
    "zmodel": AppSpec("zmodel", "Beatnik Z-Model: points per space micro-partition (trace)", False),
}


def get_app(name: str) -> ModuleType:
    """The module of app ``name``; an unknown name lists the valid ones."""
    if name not in APPS:
        raise InputError("APP", f"unknown app {name!r}", f"one of {', '.join(APPS)}")
    return importlib.import_module(f"grapeshot.apps.{APPS[name].module}")
