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

Wherever a command takes an app, it also takes a user's own program (:mod:`grapeshot.apps.user`:
``FILE.py:FACTORY``, ``package.module:FACTORY`` or an installed app's name);
:func:`make_app_program` builds either.
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


#: The scene of a built-in app when the command line gives none (an app without it takes
#: its first scene: :func:`default_scene`).
DEFAULT_SCENE = "dambreak"


def get_app(name: str) -> ModuleType:
    """The module of app ``name``; an unknown name lists the valid ones."""
    if name not in APPS:
        from grapeshot.apps.user import installed_apps

        installed = ", ".join(installed_apps())
        raise InputError(
            "APP",
            f"unknown app {name!r}",
            f"one of {', '.join(APPS)}"
            + (f", an installed app ({installed})" if installed else "")
            + ", or your own program as FILE.py:FACTORY or package.module:FACTORY",
        )
    return importlib.import_module(f"grapeshot.apps.{APPS[name].module}")


def default_scene(app: str) -> str:
    """The scene ``run`` gives built-in app ``app`` when ``--scene`` is absent:
    :data:`DEFAULT_SCENE` if the app has it, else the app's first scene."""
    scenes = get_app(app).SCENES
    return DEFAULT_SCENE if DEFAULT_SCENE in scenes else next(iter(scenes))


def make_app_program(
    app: str,
    scene: str | None,
    parts: tuple[int, ...],
    cells: tuple[int, ...] | None,
    seed: int,
    *,
    steps: int = 0,
    share: float | None = None,
):
    """The :class:`~grapeshot.model.program.Program` of a runnable app: a built-in one
    (``scene`` defaults to :func:`default_scene`) or a user's (:mod:`grapeshot.apps.user`).

    A user's program is sized from one of its partitions before it is returned, counting
    ``steps`` of record and the ``share`` of it this machine holds
    (:meth:`~grapeshot.apps.user.UserApp.make_program`); a built-in app's is sized by the
    command before (:func:`grapeshot.model.memory.check_program_memory`).

    Raises
    ------
    InputError
        For an unknown app or scene, a trace generator (it has no program), anything the
        user's module does wrong, or a user's program too big for this machine.
    """
    from grapeshot.apps.user import installed_apps, is_user_app, load_user_app

    if app not in APPS and (is_user_app(app) or app in installed_apps()):
        user = load_user_app(app)
        return user.make_program(parts, cells, seed, scene, steps=steps, share=share)
    module = get_app(app)
    if not APPS[app].runnable:
        runnable = ", ".join(a for a, s in APPS.items() if s.runnable)
        raise InputError("APP", f"{app} only records traces", f"{runnable}, or your own program")
    return module.make_program(scene or default_scene(app), parts, cells=cells, seed=seed)
