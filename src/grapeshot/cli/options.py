"""Command-line values shared by several commands: partition and cell grids, and the options
of dynamic strategies (the same name, help and type in place, run and simulate)."""

from __future__ import annotations

from typing import Annotated

import typer

from grapeshot.model.errors import InputError

#: What every ``--strategy`` help adds about a static strategy's options.
STRATEGY_OPTIONS_HELP = (
    "birdshot:shuffle=numpy or birdshot:shuffle=buckets picks Birdshot's slot-list shuffle "
    "(default auto: numpy up to 4,194,304 partitions; docs/placement.md)."
)

IntervalOption = Annotated[
    int | None,
    typer.Option("--interval", help="Dynamic strategies: steps between rebalances."),
]
ThresholdOption = Annotated[
    float | None,
    typer.Option(
        "--threshold",
        help="Dynamic strategies: tolerated load over the average, a fraction "
        "(refine 0.05, birdshot-dynamic 0.1, reactive 0.1).",
    ),
]
BalancerOption = Annotated[
    str | None,
    typer.Option(
        "--balancer",
        help="reactive: how it rebalances: pairwise (default), affine ([SHQL18]), greedy, "
        "refine, greedy-refine, greedy-comm, refine-comm.",
    ),
]
AppOption = Annotated[
    str | None,
    typer.Option(
        "--app",
        help="Your own program (FILE.py:FACTORY or package.module:FACTORY, where "
        "FACTORY(parts=, cells=, seed=) returns a grapeshot Program); the same as giving it "
        "as APP.",
    ),
]
WindowOption = Annotated[
    int | None,
    typer.Option(
        "--window",
        help="speculative: steps of forecast per placement (30); needs a coarse shadow run "
        "(FLIP traces).",
    ),
]


def chosen_app(app: str | None, app_option: str | None) -> str:
    """The app of ``run``/``trace``: the positional APP or ``--app`` (one of them).

    Raises
    ------
    InputError
        If neither or both (different) are given.
    """
    if app is not None and app_option is not None and app != app_option:
        raise InputError("--app", f"given with APP {app!r}", "one of APP, --app")
    chosen = app_option if app_option is not None else app
    if chosen is None:
        raise InputError(
            "APP",
            "missing",
            "a built-in app (sph, swe, wavefront, commbench), an installed app, or --app "
            "FILE.py:FACTORY",
        )
    return chosen


class AppsHelp(typer.core.TyperCommand):
    """A command whose ``--help`` ends with the apps installed packages register (looked up
    only when help is printed: scanning the installed packages takes a tenth of a second)."""

    def format_help(self, ctx, formatter) -> None:
        super().format_help(ctx, formatter)
        from grapeshot.apps.user import ENTRY_POINT_GROUP, installed_apps

        apps = installed_apps()
        listing = (
            ", ".join(f"{name} ({target})" for name, target in sorted(apps.items()))
            if apps
            else "none"
        )
        formatter.write(f"\nInstalled apps (entry points '{ENTRY_POINT_GROUP}'): {listing}\n")


def show_synthetic_kinds(value: str | None) -> str | None:
    """``--synthetic help``: print the SPEC kinds and keys and stop.

    The callback of an eager ``--synthetic`` option: click handles eager options before the
    others, so the listing needs no ``--machine`` or other required option.
    """
    if value == "help":
        from grapeshot.cli.output import console
        from grapeshot.model.synthetic import describe_kinds

        console.print(describe_kinds(), highlight=False, markup=False)
        raise typer.Exit()
    return value
