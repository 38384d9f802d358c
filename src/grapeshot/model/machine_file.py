"""The machine file: a TOML description of a user's own cluster.

Example (every key but ``name``, ``nodes`` and ``node.levels`` is optional)::

    name = "my-cluster"
    nodes = 64
    # node_cores = [18, 18, 36, ...]   # only when nodes differ; one entry per node

    [node]
    levels = [["socket", 2], ["core", 9]]
    core_numbering = [0, 2, 4, 6, 8, 10, 12, 14, 16, 1, 3, 5, 7, 9, 11, 13, 15, 17]

    [network]
    topology = "flat"          # flat | fat-tree | torus3d
    latency = 50e-6            # seconds, one way
    bandwidth = 1.25e9         # bytes per second per node
    node_contention = false    # true: a node receives one message at a time
    memcpy_bandwidth = 5e9     # bytes per second, copies inside a node

    [network.torus3d]          # only with topology = "torus3d"
    dims = [4, 4, 2]
    nodes_per_router = 2
    link_weights = [2.0, 1.0, 2.0]

Unknown keys are errors (a typo must not silently fall back to a default).
"""

from __future__ import annotations

import difflib
import os
import tomllib
from pathlib import Path
from typing import Any

from grapeshot.model.errors import InputError, read_input_text
from grapeshot.model.machine import TOPOLOGIES, Machine, Network, NodeTree
from grapeshot.model.presets import preset, preset_name

_TOP_KEYS = {"name", "nodes", "node_cores", "node", "network"}
_NODE_KEYS = {"levels", "core_numbering"}
_NETWORK_KEYS = {"topology", "latency", "bandwidth", "node_contention", "memcpy_bandwidth"}
_NETWORK_SECTIONS = {t.replace("-", "_") for t in TOPOLOGIES if TOPOLOGIES[t]}


def _reject_unknown(table: dict[str, Any], allowed: set[str], where: str, path: str) -> None:
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, sorted(allowed), n=1)
            problem = f"unknown key (did you mean {close[0]!r}?)" if close else "unknown key"
            raise InputError(
                f"{path}: {where}{key}", problem, f"one of {', '.join(sorted(allowed))}"
            )


def machine_from_dict(data: dict[str, Any], path: str = "<machine>") -> Machine:
    """Build and validate a :class:`Machine` from the parsed TOML ``data`` of file ``path``."""
    _reject_unknown(data, _TOP_KEYS, "", path)
    required = {
        "name": 'name = "my-cluster"',
        "nodes": "nodes = 64 (the node count; --nodes resizes it)",
        "node": '[node] with levels = [["socket", 2], ["core", 9]] (docs/machines.md)',
    }
    for key, example in required.items():
        if key not in data:
            raise InputError(f"{path}: {key}", "missing", example)
    node = data["node"]
    if not isinstance(node, dict):
        raise InputError(f"{path}: node", "is not a table", "[node] with levels = [...]")
    _reject_unknown(node, _NODE_KEYS, "node.", path)
    if "levels" not in node:
        raise InputError(f"{path}: node.levels", "missing", 'e.g. [["socket", 2], ["core", 9]]')
    network = dict(data.get("network", {}))
    if not isinstance(data.get("network", {}), dict):
        raise InputError(f"{path}: network", "is not a table", "[network]")
    _reject_unknown(network, _NETWORK_KEYS | _NETWORK_SECTIONS, "network.", path)
    topology = network.get("topology", "flat")
    section = topology.replace("-", "_") if isinstance(topology, str) else ""
    params: dict[str, Any] = {}
    for name in _NETWORK_SECTIONS:
        if name in network:
            table = network.pop(name)
            if name != section:
                raise InputError(
                    f"{path}: network.{name}", f"given but topology is {topology!r}", None
                )
            params = dict(table)
    levels = node["levels"]
    if not isinstance(levels, list) or not all(
        isinstance(level, list) and len(level) == 2 for level in levels
    ):
        raise InputError(f"{path}: node.levels", f"got {levels!r}", "a list of [name, count] pairs")
    numbering = node.get("core_numbering")
    if numbering is not None and not (
        isinstance(numbering, list) and all(type(i) is int for i in numbering)
    ):
        raise InputError(f"{path}: node.core_numbering", f"got {numbering!r}",
                         "a list of core indices")  # fmt: skip
    node_cores = data.get("node_cores")
    if node_cores is not None and not isinstance(node_cores, list):
        raise InputError(f"{path}: node_cores", f"got {node_cores!r}", "a list of core counts")
    # Each part is built apart so that a malformed value is reported under its own field.
    parts: list[tuple[str, Any]] = [
        ("node", lambda: NodeTree(levels=tuple(tuple(level) for level in levels),
                                  core_numbering=numbering)),
        ("network" + (f".{section}" if params else ""),
         lambda: Network(**network, params=params)),
    ]  # fmt: skip
    built: dict[str, Any] = {}
    for where, make in parts:
        try:
            built[where.split(".")[0]] = make()
        except InputError as exc:
            raise InputError(f"{path}: {exc.where}", exc.problem, exc.expected) from None
        except (TypeError, ValueError, OverflowError) as exc:
            raise InputError(f"{path}: {where}", f"malformed ({exc})", None) from None
    try:
        return Machine(
            name=data["name"] if isinstance(data["name"], str) else str(data["name"]),
            nodes=data["nodes"],
            node=built["node"],
            network=built["network"],
            node_cores=None if node_cores is None else tuple(node_cores),
        )
    except InputError as exc:
        raise InputError(f"{path}: {exc.where}", exc.problem, exc.expected) from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(f"{path}: nodes", f"malformed machine description ({exc})", None) from None


def load_machine_file(path: str | os.PathLike[str]) -> Machine:
    """Read and validate a machine TOML file; errors name the file and the line or field."""
    p = Path(path)
    text = read_input_text(p, "a readable TOML file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(str(p), f"invalid TOML: {exc}", None) from None
    return machine_from_dict(data, str(p))


def is_machine_file(preset_or_file: str) -> bool:
    """Whether ``--machine preset_or_file`` names a machine file rather than a preset: a
    preset's name wins; else a ``.toml`` name or an existing path is a file.

    A file's node count is the user's description of their cluster; a preset's is the size of
    its paper's example, which commands may fit to their input.
    """
    if preset_name(preset_or_file) is not None:
        return False
    return preset_or_file.endswith(".toml") or Path(preset_or_file).exists()


def load_machine(preset_or_file: str, nodes: int | None = None) -> Machine:
    """A preset by name or a machine file by path, optionally resized to ``nodes`` nodes."""
    if is_machine_file(preset_or_file):
        machine = load_machine_file(preset_or_file)
    else:
        machine = preset(preset_or_file)  # raises the unknown-preset error
    if nodes is not None:
        machine = machine.with_nodes(nodes)
    return machine
