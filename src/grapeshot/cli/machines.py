"""``grapeshot machines``: the machine presets, with their nodes, cores and network."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from grapeshot.cli.output import console, emit_json
from grapeshot.model.machine import Machine
from grapeshot.model.presets import PRESETS

#: Bytes per second in one Gbit/s.
_GBIT = 1e9 / 8


#: Most distinct per-node core counts :func:`describe_machine` lists one by one.
_MAX_CORE_KINDS = 8


def _node_cores(machine: Machine) -> str:
    """How many nodes have how many cores: ``"2 of 16, 1 of 32, 1 of 64"``."""
    import numpy as np

    values, counts = np.unique(machine.cores(), return_counts=True)
    if len(values) > _MAX_CORE_KINDS:
        return f"{len(values)} different counts from {values[0]} to {values[-1]}"
    return ", ".join(f"{n} of {v}" for v, n in zip(values.tolist(), counts.tolist(), strict=True))


def describe_machine(machine: Machine) -> dict[str, Any]:
    """A machine's sizes and network as plain data (what ``--json`` prints per preset).

    ``cores_per_node`` is an integer when every node has the same cores; when they differ
    (a file's ``node_cores``) it is the range as text, ``"16–64"``, and ``node_cores`` says
    how many nodes have each count: the largest alone would misstate the machine.
    """
    net = machine.network
    cores: dict[str, Any] = {"cores_per_node": machine.cores_per_node}
    if not machine.uniform:
        cores = {"cores_per_node": machine.describe_cores(), "node_cores": _node_cores(machine)}
    return {
        "name": machine.name,
        "nodes": machine.nodes,
        **cores,
        "node_tree": "×".join(str(count) for _, count in machine.node.levels),
        "node_levels": [level for level, _ in machine.node.levels],
        "total_cores": machine.total_cores,
        "topology": net.topology,
        "latency_s": net.latency,
        "bandwidth_bytes_per_s": net.bandwidth,
        "node_contention": net.node_contention,
        "params": dict(net.params),
    }


def _bits(bytes_per_s: float) -> str:
    """``1.25e9`` → ``"10 Gb/s"``; below 1 Gbit/s in Mb/s."""
    gbit = bytes_per_s / _GBIT
    return f"{gbit:.3g} Gb/s" if gbit >= 1 else f"{gbit * 1e3:.3g} Mb/s"


def machines_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """List the machine presets: nodes, cores per node, network, latency and bandwidth.

    Every command that takes `--machine NAME` accepts these names (in any case), or a
    machine .toml file (docs/machines.md); `--nodes` resizes a preset. The node counts are
    the defaults, the sizes of the source papers' runs.
    """
    rows = [describe_machine(make()) for make in PRESETS.values()]
    if as_json:
        emit_json({"machines": rows})
        return
    table = Table(title="Machine presets (--machine NAME; --nodes N resizes)", box=box.SIMPLE)
    for col, justify in (
        ("name", "left"), ("nodes", "right"), ("cores per node", "right"), ("network", "left"),
        ("latency", "right"), ("bandwidth", "right"),
    ):  # fmt: skip
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(
            row["name"],
            str(row["nodes"]),
            f"{row['cores_per_node']}"
            + (f" ({row['node_tree']})" if len(row["node_levels"]) > 1 else ""),
            row["topology"] + ("*" if row["node_contention"] else ""),
            f"{row['latency_s'] * 1e6:g} µs",
            _bits(row["bandwidth_bytes_per_s"]),
        )
    console.print(table)
    console.print(
        "cores per node (sockets×cores); network* : a node receives one message at a time. "
        "Sources: docs/machines.md.",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    """Add ``machines`` to the command line."""
    app.command("machines")(machines_command)
