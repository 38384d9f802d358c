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


def parse_sizes(text: str, where: str) -> tuple[int, ...]:
    """``"8"``, ``"8,4"``, ``"8x4x2"`` → positive ints (1 to 3 of them).

    Raises
    ------
    InputError
        Naming ``where`` if ``text`` is not 1 to 3 positive integers.
    """
    expected = "1 to 3 positive integers separated by ',' or 'x', e.g. 8,8"
    try:
        sizes = tuple(int(x) for x in text.lower().replace("x", ",").split(","))
    except ValueError:
        raise InputError(where, f"got {text!r}", expected) from None
    if not 1 <= len(sizes) <= 3 or min(sizes) < 1:
        raise InputError(where, f"got {text!r}", expected)
    return sizes


def parse_parts(text: str) -> tuple[int, ...]:
    """``--parts PX[,PY[,PZ]]``; one value means a square 2-D grid (``8`` → ``(8, 8)``)."""
    parts = parse_sizes(text, "--parts")
    return parts * 2 if len(parts) == 1 else parts


def parse_cells(text: str | None, ndim: int) -> tuple[int, ...] | None:
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
