"""``grapeshot repro``: regenerate a paper's figure or table, paper values beside ours."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from grapeshot.cli.output import console, emit_json
from grapeshot.model.atomic import check_output_path, write_text_atomic
from grapeshot.model.errors import InputError
from grapeshot.model.json_text import json_text
from grapeshot.report.figures import save_figure
from grapeshot.report.repro import REGISTRY, get_entry, result_json

HELP = (
    "Regenerate one paper result: writes DIR/NAME.png and DIR/NAME.json and prints the paper's "
    "values beside ours with the ratio and why they differ. --list shows every entry."
)


def repro_command(
    name: Annotated[str | None, typer.Argument(help="Entry name (see --list).")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List every entry.")] = False,
    quick: Annotated[bool, typer.Option("--quick", help="Reduced size, under a minute.")] = False,
    out: Annotated[
        Path,
        typer.Option(
            "--out-dir",
            "--out",
            help="Folder for NAME.json and NAME.png (--out: the same, its first name).",
        ),
    ] = Path("repro"),
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Run one repro entry or list them; see ``HELP``."""
    if list_ or name is None:
        if as_json:
            fields = ("name", "paper", "runs", "expected_time", "quick_time")
            entries = [{f: getattr(e, f) for f in fields} for e in REGISTRY.values()]
            emit_json({"entries": entries})
            return
        table = Table(title="grapeshot repro entries")
        for col in ("name", "paper / figure", "what it runs", "time (2 cores)", "--quick"):
            table.add_column(col)
        for e in REGISTRY.values():
            table.add_row(e.name, e.paper, e.runs, e.expected_time, e.quick_time)
        console.print(table)
        return
    try:
        entry = get_entry(name)
    except ValueError as exc:
        raise InputError("NAME", str(exc)) from None
    check_output_path(out, "--out-dir", folder=True)  # before the entry runs (minutes)
    with console.status(f"running {name}", spinner="dots"):
        result = entry.function(quick)
    payload = result_json(result, quick)
    write_text_atomic(out / f"{name}.json", json_text(payload, indent=2) + "\n")
    if result.figure is not None:
        save_figure(result.figure, out / f"{name}.png")
    if as_json:
        emit_json(payload)
        return
    table = Table(title=result.title)
    for col in ("point", "paper", "grapeshot", "ratio"):
        table.add_column(col, justify="left" if col == "point" else "right")

    def fmt(x: float | None, unit: str) -> str:
        return "—" if x is None else f"{x:.4g}{(' ' + unit) if unit else ''}"

    for r in result.rows:
        ratio = "—" if r.ratio is None else f"{r.ratio:.3g}"
        table.add_row(r.label, fmt(r.paper, r.unit), fmt(r.ours, r.unit), ratio)
    console.print(table)
    for note in result.notes:
        console.print(f"• {note}", highlight=False)
    console.print(f"wrote {out / (name + '.json')} and {out / (name + '.png')}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``repro`` to the command line."""
    app.command("repro", help=HELP)(repro_command)
