"""The foundation demo: a dam break placed geometrically and by Birdshot, compared.

The synthetic dam break's water starts in one corner of the domain and sweeps along the floor,
so a geometric placement leaves most nodes idle in most steps, while Birdshot's random
placement of many micro-partitions per core spreads the wet partitions over every node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grapeshot.model.machine import Machine
from grapeshot.model.machine_file import load_machine
from grapeshot.model.placement import PlacementMetrics, placement_metrics
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload import Workload
from grapeshot.place import place
from grapeshot.theory.lif import expected_lif


@dataclass(frozen=True)
class DemoResult:
    """What the demo measured."""

    machine: Machine
    workload: Workload
    parts_per_core: int
    metrics: dict[str, PlacementMetrics]
    busy_fraction: float
    predicted_lif: float


def square_grid(parts: int) -> tuple[int, int]:
    """The most square 2-D grid with exactly ``parts`` cells (rows >= columns)."""
    cols = math.isqrt(parts)
    while parts % cols:
        cols -= 1
    return parts // cols, cols


def run_demo(
    *,
    machine: str = "ec2-c4.8xlarge",
    nodes: int = 32,
    parts_per_core: int = 4,
    steps: int = 200,
    seed: int = 1,
) -> DemoResult:
    """Place the synthetic dam break with geometric and Birdshot and measure both."""
    m = load_machine(machine, nodes)
    px, py = square_grid(m.total_cores * parts_per_core)
    workload = synthetic_workload(f"dambreak:parts={px}x{py},steps={steps}")
    metrics = {
        name: placement_metrics(place(workload, m, name, seed=seed), workload, m)
        for name in ("geometric", "birdshot")
    }
    busy = float((workload.cost > 0).mean())
    parts_per_node = workload.n_parts // m.nodes
    predicted = expected_lif(m.nodes, parts_per_node, busy, model="fixed-count", seed=seed).mean
    return DemoResult(m, workload, parts_per_core, metrics, busy, predicted)
