"""``grapeshot show FILE``: what a file grapeshot wrote is, its sizes and its metrics."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table

from grapeshot.cli.output import console, emit_json
from grapeshot.model.errors import InputError

if TYPE_CHECKING:
    from grapeshot.model.placement import Placement

#: What ``show`` reads; the message of an unrecognised file lists them.
KINDS = (
    "a file grapeshot writes: a trace or run record (HDF5), a placement (.json, .part, .csv, "
    ".npy), a timeline, a map or repro result (JSON), a job log (.swf), a figure (.png, .svg), "
    "VTK output (.vti, .vts, .pvd), a Beatnik .view, or a machine (.toml)"
)
#: Placement files other than grapeshot's JSON, recognised by their extension.
PLACEMENT_TABLES = (".part", ".csv", ".npy")
#: The first bytes of a PNG file, and its last chunk (a file cut short lacks it).
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_END = b"IEND\xaeB`\x82"
#: What reading a recognised file's fields may raise when the file is damaged inside.
_DAMAGE = (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError)


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
            if "rebalances/parts_moved" in run:  # every move of every call, in-run rebalances
                moved = int(run["rebalances/parts_moved"][()].sum())
            elif "node_of" in run and "node_of_final" in run:
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


def _placement_facts(placement: Placement) -> dict[str, Any]:
    """What any placement file says: its strategy and seed (``.json`` only), its sizes; of a
    per-rank placement (``place --ranks``), its ranks and grid instead of nodes and cores."""
    fewest, most = placement.count_range()
    if placement.per_rank:
        return {
            "strategy": placement.strategy,
            "seed": placement.seed,
            "ranks": placement.nodes,
            "grid": list(placement.grid or ()),
            "parts": placement.n_parts,
            "parts_per_rank_min": fewest,
            "parts_per_rank_max": most,
        }
    return {
        "strategy": placement.strategy,
        "seed": placement.seed,
        "nodes": placement.nodes,
        "parts": placement.n_parts,
        "parts_per_node_min": fewest,
        "parts_per_node_max": most,
        "has_cores": placement.core_of is not None,
    }


def _timeline_facts(data: dict[str, Any]) -> dict[str, Any]:
    """A Chrome-trace timeline (``run --timeline``, ``simulate --timeline``)."""
    events = [e for e in data["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
    ends = [float(e.get("ts", 0)) + float(e.get("dur", 0)) for e in events]
    starts = [float(e.get("ts", 0)) for e in events]
    return {
        "tasks": len(events),
        "processes": len({e.get("pid") for e in events}),
        "span_s": (max(ends) - min(starts)) / 1e6 if events else 0.0,
    }


def _mapping_facts(result: dict[str, Any]) -> dict[str, Any]:
    """One strategy's result of ``map --matrix`` (``place.mapping.map_tasks``)."""
    cost = result["cost"]
    core_of = result["core_of"]
    return {
        "strategy": str(result["strategy"]),
        "tasks": len(core_of),
        "cores_used": len(set(core_of)),
        "oversub": int(result["oversub"]),
        "hop_bytes": float(cost["hop_bytes"]),
        "sum_com": float(cost["sum_com"]),
        "max_com": float(cost["max_com"]),
        "seconds": float(result["seconds"]),
    }


def _map_facts(data: dict[str, Any]) -> dict[str, Any]:
    """What ``map --out`` wrote: one mapping, several, or strategies compared on a workload."""
    if "core_of" in data:
        return _mapping_facts(data)
    rows = data["strategies"]
    if "best" in data:  # map --trace/--synthetic: strategies on a workload and a machine
        return {
            "machine": str(data["machine"]),
            "nodes": int(data["nodes"]),
            "parts": int(data["parts"]),
            "steps": int(data["steps"]),
            "strategies": ", ".join(str(r["strategy"]) for r in rows),
            "least_hop_bytes": str(data["best"]["hop_bytes"]),
            "fastest_simulated": str(data["best"]["simulated_time"]),
        }
    each = [_mapping_facts(r) for r in rows]
    best = min(each, key=lambda r: r["hop_bytes"])
    return {
        "tasks": each[0]["tasks"],
        "strategies": ", ".join(r["strategy"] for r in each),
        "least_hop_bytes": best["strategy"],
        "hop_bytes_min": best["hop_bytes"],
    }


def _repro_facts(data: dict[str, Any]) -> dict[str, Any]:
    """What ``repro`` wrote (``report.repro.result_json``)."""
    rows = data["rows"]
    ratios = [float(r["ratio"]) for r in rows if r.get("ratio") is not None]
    return {
        "entry": str(data["name"]),
        "title": str(data["title"]),
        "quick": bool(data["quick"]),
        "rows": len(rows),
        "rows_with_paper_value": sum(r.get("paper") is not None for r in rows),
        "ratio_min": min(ratios) if ratios else None,
        "ratio_max": max(ratios) if ratios else None,
        "grapeshot_version": str(data["grapeshot_version"]),
    }


def _is_map(data: dict[str, Any]) -> bool:
    if "core_of" in data and "cost" in data:
        return True
    rows = data.get("strategies")
    return isinstance(rows, list) and bool(rows) and isinstance(rows[0], dict)


def _read_json(path: Path) -> Any:
    """The JSON document of ``path``; a placement's lists as arrays in a large file, read by
    the compiled scanner (:mod:`grapeshot.model.json_ints`) rather than as Python ints."""
    from grapeshot.model.placement import scan_placement_json

    raw = path.read_bytes()
    data = scan_placement_json(raw)
    return json.loads(raw.decode("utf-8")) if data is None else data


def _json_facts(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        data = _read_json(path)
    except UnicodeDecodeError:
        raise InputError(str(path), "is neither HDF5 nor text", KINDS) from None
    except json.JSONDecodeError as exc:
        if exc.doc.lstrip()[:1] not in ("{", "["):
            raise InputError(str(path), "is not a file grapeshot writes", KINDS) from None
        # grapeshot writes its JSON atomically: a break in it is a damaged or cut-short copy.
        raise InputError(
            f"{path} line {exc.lineno}",
            f"is damaged or cut short: invalid JSON ({exc.msg})",
            "complete JSON (write it again, or copy it again if it was copied)",
        ) from None
    if isinstance(data, dict) and data.get("format") == "grapeshot-placement":
        from grapeshot.model.placement import placement_from_json

        facts = _placement_facts(placement_from_json(data, str(path)))
        metrics = data.get("metrics")
        if isinstance(metrics, dict):
            facts.update({k: v for k, v in metrics.items() if k not in facts})
        return "placement", facts
    if not isinstance(data, dict):
        raise InputError(str(path), f"is a JSON {type(data).__name__}, not a grapeshot file", KINDS)
    if isinstance(data.get("traceEvents"), list):
        kind, read = "timeline", _timeline_facts
    elif {"name", "rows", "grapeshot_version"} <= data.keys():
        kind, read = "repro result", _repro_facts
    elif _is_map(data):
        kind, read = "mapping", _map_facts
    else:
        raise InputError(
            str(path), "is JSON but not a placement, timeline, mapping or repro result", KINDS
        )
    try:
        return kind, read(data)
    except _DAMAGE as exc:
        raise InputError(str(path), f"is a damaged {kind} ({_reason(exc)})", None) from None


def _reason(exc: BaseException) -> str:
    """A short reason for a damaged file: the missing key, or the first line of the error."""
    if isinstance(exc, KeyError):
        return f"no field {exc.args[0]!r}" if exc.args else "a field is missing"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:120]


def _swf_facts(path: Path) -> dict[str, Any]:
    """A job log in the Standard Workload Format (``jobs generate --out``, archive logs)."""
    from grapeshot.jobs.swf import read_swf

    read = read_swf(path)
    trace = read.trace
    # grapeshot ends every line it writes: a last line that is both bad and unterminated is a
    # file cut short (an interrupted copy), not a log with an odd line in it.
    raw = path.read_bytes()
    last_line = raw.count(b"\n") + 1
    if read.bad and not raw.endswith(b"\n"):
        bad = read.bad[-1]
        where = re.search(r" line (\d+)", bad.where)
        if where is not None and int(where.group(1)) == last_line:
            raise InputError(
                str(path),
                f"is cut short: its line {last_line} is incomplete ({bad.problem})",
                "a complete SWF log (write it again, or copy it again if it was copied)",
            )
    if len(trace) == 0:
        first = f" ({read.bad[0]})" if read.bad else ""
        raise InputError(str(path), f"holds no job{first}", "an SWF job log (docs/jobs.md)")
    submit = trace.submit
    # The machine's size as the log's header states it (SWF's MaxProcs), when it does.
    words = trace.header.get("MaxProcs", "").split()
    facts: dict[str, Any] = {
        "jobs": len(trace),
        "bad_lines": len(read.bad),
        "max_procs": int(words[0]) if words and words[0].isdigit() else None,
        "largest_job_procs": int(trace.procs.max()),
        "span_days": float(submit.max() - submit.min()) / 86400.0,
    }
    if read.bad:
        # A file cut short or edited by hand: what the first skipped line says is wrong.
        facts["first_bad_line"] = str(read.bad[0])
    return facts


def _png_facts(path: Path, data: bytes) -> dict[str, Any]:
    """A PNG figure or snapshot: its size in pixels; a file cut short is refused."""
    if len(data) < 24 or data[12:16] != b"IHDR":
        raise InputError(str(path), "is a damaged PNG (no IHDR header)", "an intact PNG")
    if not data.rstrip(b"\0").endswith(PNG_END):
        raise InputError(
            str(path), f"is a truncated PNG ({len(data):,} bytes, no IEND chunk)", "an intact PNG"
        )
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return {"format": "png", "width_px": width, "height_px": height, "bytes": len(data)}


def _xml_root(path: Path, data: bytes, what: str):
    import xml.etree.ElementTree as ET

    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        raise InputError(str(path), f"is a damaged {what} ({exc})", f"an intact {what}") from None


def _svg_facts(path: Path, data: bytes) -> dict[str, Any]:
    """An SVG figure: its size as written."""
    root = _xml_root(path, data, "SVG")
    if not root.tag.endswith("svg"):
        raise InputError(str(path), f"is XML with root {root.tag!r}", "an SVG figure")
    return {
        "format": "svg",
        "width": root.get("width", "?"),
        "height": root.get("height", "?"),
        "bytes": len(data),
    }


def _vtk_facts(path: Path, data: bytes) -> dict[str, Any]:
    """VTK XML output: a collection (``.pvd``) or one grid (``.vti``, ``.vts``, raw appended)."""
    # The raw appended block is not XML: parse the header up to it, and check the file ends
    # as written (a copy cut short loses its closing tags).
    if not data.rstrip().endswith(b"</VTKFile>"):
        raise InputError(str(path), "is a truncated VTK file (no closing </VTKFile>)", None)
    marker = data.find(b"<AppendedData")
    head = data if marker < 0 else data[:marker] + b"</VTKFile>"
    root = _xml_root(path, head, "VTK file")
    kind = root.get("type", "?")
    if kind == "Collection":
        frames = root.findall("./Collection/DataSet")
        times = [float(f.get("timestep", "nan")) for f in frames]
        return {
            "vtk_type": kind,
            "frames": len(frames),
            "time_first": min(times) if times else None,
            "time_last": max(times) if times else None,
        }
    grid = root.find(kind)
    if grid is None:
        raise InputError(str(path), f"is a damaged VTK file (no {kind} element)", None)
    arrays = [a.get("Name", "?") for a in root.iter("DataArray")]
    return {
        "vtk_type": kind,
        "extent": grid.get("WholeExtent", "?"),
        "arrays": ", ".join(arrays),
        "bytes": len(data),
    }


def _view_facts(path: Path) -> dict[str, Any]:
    """A Beatnik view file (``zmodel --write-views``): its array's shape."""
    from grapeshot.apps.zmodel.views import read_view

    array = read_view(path)
    return {"shape": list(array.shape), "components": int(array.shape[-1])}


def _looks_like_swf(head: bytes) -> bool:
    """Text whose first line is an SWF header comment or a data line of 18 numbers."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if first.startswith(";"):
        return True
    words = first.split()
    return len(words) >= 18 and all(w.lstrip("-").replace(".", "", 1).isdigit() for w in words)


def describe_file(path: Path) -> tuple[str, dict[str, Any]]:
    """``(kind, facts)`` of ``path``: ``"trace"``, ``"run record"``, ``"placement"``, ...

    Raises
    ------
    InputError
        If the file is missing, damaged, or none of the kinds :data:`KINDS`.
    """
    if path.is_dir():
        raise InputError(str(path), "is a directory", f"a file in it: {KINDS}")
    if not path.is_file():
        raise InputError(str(path), "no such file", KINDS)
    from grapeshot.model.workload_file import HDF5_SIGNATURE

    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise InputError(str(path), f"cannot read ({exc.strerror or exc})", KINDS) from None
    suffix = path.suffix.lower()
    if head.startswith(HDF5_SIGNATURE) or suffix in (".h5", ".hdf5"):
        facts = _trace_facts(path)
        run = _record_facts(path)
        if run is None:
            return "trace", facts
        return "run record", {**run, **facts}
    if suffix == ".toml":
        from grapeshot.cli.machines import describe_machine
        from grapeshot.model.machine_file import load_machine_file

        return "machine", describe_machine(load_machine_file(path))
    if suffix in PLACEMENT_TABLES:
        # No strategy, seed or node count in these: the nodes are the largest named + 1.
        from grapeshot.model.placement import load_placement

        return "placement", {**_placement_facts(load_placement(path)), "format": suffix[1:]}
    if head.startswith(PNG_SIGNATURE) or suffix == ".png":
        if not head.startswith(PNG_SIGNATURE):
            raise InputError(str(path), "is not a PNG (no PNG signature)", "an intact PNG")
        return "figure", _png_facts(path, path.read_bytes())
    if suffix == ".view":
        return "view", _view_facts(path)
    if suffix in (".vti", ".vts", ".pvd") or b"<VTKFile" in head:
        return "vtk", _vtk_facts(path, path.read_bytes())
    if suffix == ".svg" or b"<svg" in head:
        return "figure", _svg_facts(path, path.read_bytes())
    if suffix == ".swf" or _looks_like_swf(head):
        return "job log", _swf_facts(path)
    return _json_facts(path)


_WHAT = {
    "trace": "a workload trace (HDF5): cost per partition per step and the halo graph",
    "run record": "a run record (HDF5) of grapeshot run --record; also a trace",
    "placement": "a placement of grapeshot place --out: partition → node",
    "rank placement": "a per-rank placement of grapeshot place --ranks --out: partition → MPI rank",
    "timeline": "a Chrome-trace timeline (JSON); open it in Perfetto",
    "mapping": "a result of grapeshot map --out (JSON): tasks mapped onto cores",
    "repro result": "a result of grapeshot repro (JSON): the paper's values beside ours",
    "job log": "a batch-job log in the Standard Workload Format (grapeshot jobs generate)",
    "figure": "a figure (grapeshot place/simulate --figure, repro, demo, trace --snapshot)",
    "vtk": "VTK output (grapeshot trace --vtk, zmodel --vtk); open it in ParaView",
    "view": "a Beatnik view file (grapeshot zmodel --write-views)",
    "machine": "a machine file (TOML)",
}


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
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
    (`--timeline`), a mapping (`map --out`), a repro result (`repro`), a job log (`jobs
    generate --out`, .swf), a figure (.png, .svg), VTK output (.vti, .vts, .pvd), a Beatnik
    .view, or a machine file (.toml).
    A damaged or truncated file is one line saying so. Formats: docs/formats.md.
    """
    kind, facts = describe_file(file)
    if as_json:
        emit_json({"file": str(file), "kind": kind, **facts})
        return
    what = _WHAT["rank placement" if kind == "placement" and "ranks" in facts else kind]
    console.print(f"{file}: {what}", highlight=False, markup=False, soft_wrap=True)
    table = Table(box=box.SIMPLE)
    table.add_column("field")
    table.add_column("value", justify="right")
    for key, value in facts.items():
        table.add_row(key.replace("_", " "), _fmt(value))
    console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``show`` to the command line."""
    app.command("show")(show_command)
