"""``grapeshot show FILE``: what a file grapeshot wrote is, its sizes and its metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from grapeshot.cli.output import console, emit_json
from grapeshot.model.errors import InputError

#: What ``show`` reads; the message of an unrecognised file lists them.
KINDS = (
    "a trace or run record (HDF5), a placement (.json, .part, .csv, .npy) or timeline (JSON), "
    "or a machine (.toml)"
)
#: Placement files other than grapeshot's JSON, recognised by their extension.
PLACEMENT_TABLES = (".part", ".csv", ".npy")


def _trace_facts(path: Path) -> dict[str, Any]:
    import numpy as np

    from grapeshot.model.placement import load_imbalance
    from grapeshot.model.workload_file import load_workload

    wl = load_workload(path)
    cost = wl.cost
    per_step = cost.sum(axis=1)
    busy = (cost > 0).mean() if cost.size else 0.0
    return {
        "app": wl.app,
        "scene": wl.scene,
        "domain_shape": list(wl.domain_shape),
        "parts_shape": list(wl.parts_shape),
        "parts": wl.n_parts,
        "steps": wl.n_steps,
        "units": wl.units,
        "cost_per_step": float(per_step.mean()) if per_step.size else 0.0,
        "busy_fraction": float(busy),
        # One partition per node: how unbalanced the partitions themselves are.
        "partition_lif_mean": float(np.mean(load_imbalance(cost))) if cost.size else 0.0,
        "halo_messages": int(wl.halo.nbytes.size),
        "halo_bytes_per_step": int(wl.halo.nbytes.sum()),
        "has_work": wl.work is not None,
    }


def _record_facts(path: Path) -> dict[str, Any] | None:
    """The ``run`` group of a run record, or ``None`` for a plain trace."""
    import numpy as np

    from grapeshot.model.workload_file import damaged, open_hdf5

    with open_hdf5(path, "an HDF5 trace or run record") as f:
        if "run" not in f:
            return None
        try:
            run = f["run"]
            attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in run.attrs.items()}
            tasks = int(run["tasks/part"].shape[0]) if "tasks/part" in run else 0
            messages = int(run["messages/bytes"].shape[0]) if "messages/bytes" in run else 0
            moved = 0
            if "node_of" in run and "node_of_final" in run:
                moved = int(np.count_nonzero(run["node_of"][()] != run["node_of_final"][()]))
        except (OSError, KeyError, ValueError, RuntimeError, TypeError) as exc:
            raise damaged(path, exc) from None
    keep = ("ranks", "threads", "strategy", "executor", "wall_time", "bytes_sent",
            "fields_digest", "bytes_migrated")  # fmt: skip
    return {
        **{k: attrs[k] for k in keep if k in attrs},
        "tasks": tasks,
        "mpi_messages": messages,
        "partitions_migrated": moved,
    }


def _placement_facts(path: Path) -> dict[str, Any]:
    """What any placement file says: its strategy and seed (``.json`` only), its sizes."""
    from grapeshot.model.placement import load_placement

    placement = load_placement(path)
    counts = placement.counts()
    return {
        "strategy": placement.strategy,
        "seed": placement.seed,
        "nodes": placement.nodes,
        "parts": placement.n_parts,
        "parts_per_node_min": int(counts.min()),
        "parts_per_node_max": int(counts.max()),
        "has_cores": placement.core_of is not None,
    }


def _json_facts(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InputError(str(path), "is neither HDF5 nor text", KINDS) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} line {exc.lineno}", f"invalid JSON: {exc.msg}", KINDS) from None
    if isinstance(data, dict) and data.get("format") == "grapeshot-placement":
        facts = _placement_facts(path)
        metrics = data.get("metrics")
        if isinstance(metrics, dict):
            facts.update({k: v for k, v in metrics.items() if k not in facts})
        return "placement", facts
    if isinstance(data, dict) and isinstance(data.get("traceEvents"), list):
        events = [e for e in data["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
        ends = [float(e.get("ts", 0)) + float(e.get("dur", 0)) for e in events]
        starts = [float(e.get("ts", 0)) for e in events]
        facts = {
            "tasks": len(events),
            "processes": len({e.get("pid") for e in events}),
            "span_s": (max(ends) - min(starts)) / 1e6 if events else 0.0,
        }
        return "timeline", facts
    raise InputError(str(path), "is JSON but not a placement or a timeline", KINDS)


def describe_file(path: Path) -> tuple[str, dict[str, Any]]:
    """``(kind, facts)`` of ``path``: ``"trace"``, ``"run record"``, ``"placement"``, ...

    Raises
    ------
    InputError
        If the file is missing, damaged, or none of the kinds :data:`KINDS`.
    """
    if not path.is_file():
        raise InputError(str(path), "no such file", KINDS)
    from grapeshot.model.workload_file import HDF5_SIGNATURE

    with open(path, "rb") as fh:
        head = fh.read(len(HDF5_SIGNATURE))
    if head == HDF5_SIGNATURE or path.suffix in (".h5", ".hdf5"):
        facts = _trace_facts(path)
        run = _record_facts(path)
        if run is None:
            return "trace", facts
        return "run record", {**run, **facts}
    if path.suffix == ".toml":
        from grapeshot.cli.machines import describe_machine
        from grapeshot.model.machine_file import load_machine_file

        return "machine", describe_machine(load_machine_file(path))
    if path.suffix.lower() in PLACEMENT_TABLES:
        # No strategy, seed or node count in these: the nodes are the largest named + 1.
        return "placement", {**_placement_facts(path), "format": path.suffix.lower()[1:]}
    return _json_facts(path)


_WHAT = {
    "trace": "a workload trace (HDF5): cost per partition per step and the halo graph",
    "run record": "a run record (HDF5) of grapeshot run --record; also a trace",
    "placement": "a placement of grapeshot place --out: partition → node",
    "timeline": "a Chrome-trace timeline (JSON); open it in Perfetto",
    "machine": "a machine file (TOML)",
}


def _fmt(value: Any) -> str:
    if isinstance(value, str) and len(value) == 64:  # a digest: its prefix identifies it
        return value[:16] + "…"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, list):
        return "×".join(str(x) for x in value)
    return str(value)


def show_command(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="The file to look inside.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Say what a file is (trace, run record, placement) and print its sizes and metrics.

    Reads any file grapeshot writes: a workload trace (`trace --out`), a run record (`run
    --record`), a placement (`place --out`: .json, .part, .csv, .npy), a timeline
    (`--timeline`) or a machine file.
    A damaged or truncated file is one line saying so. Formats: docs/formats.md.
    """
    kind, facts = describe_file(file)
    if as_json:
        emit_json({"file": str(file), "kind": kind, **facts})
        return
    console.print(f"{file}: {_WHAT[kind]}", highlight=False, markup=False, soft_wrap=True)
    table = Table(box=box.SIMPLE)
    table.add_column("field")
    table.add_column("value", justify="right")
    for key, value in facts.items():
        table.add_row(key.replace("_", " "), _fmt(value))
    console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``show`` to the command line."""
    app.command("show")(show_command)
