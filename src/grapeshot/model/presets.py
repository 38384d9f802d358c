"""Machines of the source papers, with the figures the papers give.

Where a paper gives no figure the value is a documented assumption (see ``docs/machines.md``),
marked ``assumed`` below.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from types import MappingProxyType

from grapeshot.model.errors import InputError
from grapeshot.model.machine import Machine, Network, NodeTree

GBIT = 1e9 / 8  # bytes per second in one Gbit/s


def _ec2_c4_8xlarge() -> Machine:
    # Birdshot §7: 10 Gbit/s Ethernet, ~100 µs round trip, full bisection in a placement
    # group; 2 sockets x 9 cores (36 vCPUs with hyper-threads).
    return Machine(
        name="ec2-c4.8xlarge",
        nodes=32,
        node=NodeTree((("socket", 2), ("core", 9))),
        network=Network(topology="flat", latency=50e-6, bandwidth=10 * GBIT),
    )


def _gcp_n1_highmem_8() -> Machine:
    # Birdshot §7.1 (FLIP on OpenVDB): eight n1-highmem-8 nodes, 8 cores each. Network
    # assumed: Google's 2 Gbit/s per vCPU, i.e. 16 Gbit/s, and a cloud's ~50 µs one way.
    return Machine(
        name="gcp-n1-highmem-8",
        nodes=8,
        node=NodeTree((("socket", 1), ("core", 8))),
        network=Network(topology="flat", latency=50e-6, bandwidth=16 * GBIT),
    )


def _bluewaters_xe6() -> Machine:
    # TreeMatchLB §4.3.1/§5.1.2: XE6 nodes of 2 x 16 cores, Cray Gemini 3D torus, two nodes
    # per router, x and z links twice the y weight. Latency and injection bandwidth assumed
    # (Gemini: ~1.5 µs, ~6 GB/s per node).
    return Machine(
        name="bluewaters-xe6",
        nodes=32,
        node=NodeTree((("socket", 2), ("core", 16))),
        network=Network(
            topology="torus3d",
            latency=1.5e-6,
            bandwidth=6e9,
            params={"nodes_per_router": 2, "link_weights": (2.0, 1.0, 2.0)},
        ),
    )


def _plafrim() -> Machine:
    # TreeMatchLB §5.1.1: two quad-core Xeon X5550 per node, physical cores numbered
    # 0,2,4,6 on socket 0 and 1,3,5,7 on socket 1; InfiniBand fat tree (QDR assumed:
    # 32 Gbit/s of data, ~1.5 µs).
    return Machine(
        name="plafrim",
        nodes=16,
        node=NodeTree((("socket", 2), ("core", 4)), core_numbering=(0, 2, 4, 6, 1, 3, 5, 7)),
        network=Network(
            topology="fat-tree", latency=1.5e-6, bandwidth=32 * GBIT, params={"arity": 18}
        ),
    )


def _cm5() -> Machine:
    # Ranka & Wang table 2, 32-node CM-5: 256 B in 0.089 ms and 4096 B in 0.516 ms to one
    # receiver fit latency 60 µs and 9 MB/s; one message received at a time.
    return Machine(
        name="cm5",
        nodes=32,
        node=NodeTree((("core", 1),)),
        network=Network(
            topology="fat-tree",
            latency=60e-6,
            bandwidth=9e6,
            node_contention=True,
            memcpy_bandwidth=50e6,
            params={"arity": 4, "parents": 2},
        ),
    )


def _lassen() -> Machine:
    # LLNL Lassen: 2 x 20 usable POWER9 cores per node, InfiniBand EDR (100 Gbit/s) fat tree;
    # latency assumed ~1 µs.
    return Machine(
        name="lassen",
        nodes=32,
        node=NodeTree((("socket", 2), ("core", 20))),
        network=Network(
            topology="fat-tree", latency=1e-6, bandwidth=100 * GBIT, params={"arity": 36}
        ),
    )


PRESETS: Mapping[str, Callable[[], Machine]] = MappingProxyType(
    {
        "ec2-c4.8xlarge": _ec2_c4_8xlarge,
        "gcp-n1-highmem-8": _gcp_n1_highmem_8,
        "bluewaters-xe6": _bluewaters_xe6,
        "plafrim": _plafrim,
        "cm5": _cm5,
        "lassen": _lassen,
    }
)


def preset_name(name: str) -> str | None:
    """The preset ``name`` stands for, ignoring case (``"PlaFRIM"`` → ``"plafrim"``)."""
    folded = {key.casefold(): key for key in PRESETS}
    return folded.get(name.strip().casefold())


def preset(name: str) -> Machine:
    """The preset machine ``name`` (any case) at its default node count.

    Raises
    ------
    InputError
        For an unknown name: lists the presets, suggests the closest one, and points at
        ``grapeshot machines``.
    """
    key = preset_name(name)
    if key is not None:
        return PRESETS[key]()
    close = difflib.get_close_matches(name.casefold(), list(PRESETS), n=1, cutoff=0.5)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise InputError(
        "--machine",
        f"unknown preset {name!r}{hint}",
        f"one of {', '.join(PRESETS)} or a machine .toml file (grapeshot machines lists them)",
    )
