"""The whole slice in one command: place, run for real on MPI, simulate a big machine.

1. **Placement** (no MPI): the synthetic dam break on 32 modelled EC2 c4.8xlarge nodes at
   4 partitions per core, geometric vs Birdshot: LIF per step.
2. **Real run**: the shallow-water dam break (water on one side, Birdshot's figure 1) on two
   local MPI ranks: geometric with one partition per rank, and Birdshot on a 16×16 grid.
   Busy and idle per rank, wall time, and the fields' digest (equal: same results).
3. **Simulation**: the same scene at 3072 × 1536 cells, its cell-level load recorded
   serially and cut into 96×48 partitions, simulated on 32 nodes × 18 cores of
   ``ec2-c4.8xlarge`` for both strategies at 1, 2, 4 and 8 partitions per core, with the
   seconds per wet cell and the runtime's overheads (per task, bookkeeping, halo copies)
   fitted from the real Birdshot run's record.

Each part's numbers go into one table (printed by ``grapeshot demo``) and one figure; the
placement part also gets a figure of its own: per-node load over time for both strategies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grapeshot.model.errors import GrapeshotError
from grapeshot.model.machine_file import load_machine
from grapeshot.model.workload import Workload, grid_halo
from grapeshot.report.figures import node_load_figure, plt, save_figure
from grapeshot.report.placement_demo import DemoResult, run_demo

#: Cells (x, y) of the dam break run for real on two ranks: the runtime-speed issue's size,
#: where a step is a few milliseconds of work per rank.
CELLS = (1024, 256)
#: Cells of the same scene for the simulated 576-core machine, so that a core's share is
#: thousands of cells, as in the paper's runs, not a hundred.
SIM_CELLS = (3072, 1536)
#: The fine partition grid of the simulated trace (32×32 cells each); it merges exactly into
#: 32 × 18 × {1, 2, 4, 8} partitions.
FINE_PARTS = (96, 48)
SIM_PPC = (1, 2, 4, 8)
SIM_NODES = 32

Say = Callable[[str], None]


@dataclass
class SliceResult:
    """What the slice demo measured."""

    placement: DemoResult
    real: dict[str, dict[str, Any]]
    calibration: Any
    sim: dict[str, dict[int, dict[str, Any]]]
    figure: Path
    #: Per-node load per step of the placement part, geometric and Birdshot.
    node_load_figure: Path


def _mpiexec() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else "mpiexec"


def real_run(strategy: str, parts: str, steps: int, record: Path | None) -> dict[str, Any]:
    """``mpiexec -n 2 grapeshot run swe --scene dambreak ...`` and its JSON summary."""
    cmd = [
        _mpiexec(), "-n", "2", sys.executable, "-m", "grapeshot.cli.main", "run", "swe",
        "--scene", "dambreak", "--cells", f"{CELLS[0]},{CELLS[1]}", "--parts", parts,
        "--strategy", strategy, "--steps", str(steps), "--threads", "1", "--seed", "0",
        "--json",
    ]  # fmt: skip
    if record is not None:
        cmd += ["--record", str(record)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise GrapeshotError(f"the MPI run ({strategy}) failed: {tail}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fine_trace(steps: int) -> Workload:
    """The dam break's wet cells per 32×32-cell partition per step, from one serial run.

    Shallow-water cost lives in wet cells, so a cell-level record can be cut into any
    partition grid: one partition runs serially (no per-partition overhead), and after every
    step its depth, read in place in the block, is reduced to wet cells per fine partition
    (assembling the output fields every step would copy four domain-sized arrays a step).
    """
    from grapeshot.apps.swe import H, make_program
    from grapeshot.model.program import make_block
    from grapeshot.runtime.serial import run_serial

    program = make_program("dambreak", (1, 1), cells=SIM_CELLS)
    h_dry = program.config.h_dry
    (box,) = program.boxes()
    blocks = [make_block(program, box)]
    fx, fy = SIM_CELLS[0] // FINE_PARTS[0], SIM_CELLS[1] // FINE_PARTS[1]
    counts = np.zeros((steps, FINE_PARTS[0] * FINE_PARTS[1]), dtype=np.int64)

    def count(done: int, _steps: int) -> None:
        h = blocks[0]["q"][(*box.interior(), H)]
        wet = (h > h_dry).reshape(FINE_PARTS[0], fx, FINE_PARTS[1], fy)
        counts[done - 1] = wet.sum(axis=(1, 3)).reshape(-1)

    run_serial(program, steps, progress=count, blocks=blocks)
    return Workload(
        domain_shape=SIM_CELLS,
        parts_shape=FINE_PARTS,
        cost=counts.astype(np.float64),
        # The two Heun stages each exchange 2 ghost layers of (h, hu, hv): 24 bytes a cell.
        halo=grid_halo(SIM_CELLS, FINE_PARTS, ghost=2, cell_bytes=24),
        units="work",
        work=counts,
        app="swe",
        scene="dambreak",
    )


def simulate_trace(workload: Workload, calibration, seed: int) -> dict[str, dict[int, dict]]:
    """Geometric and Birdshot at every ppc of :data:`SIM_PPC` on 32 EC2 nodes."""
    from grapeshot.sim import SimOptions, WorkloadSource, run_sweep

    machine = load_machine("ec2-c4.8xlarge", SIM_NODES)
    # EC2's network stays EC2's; the runtime's costs (per task, bookkeeping, halo copies) and
    # the seconds per wet cell are this machine's, measured by the real run. The record's
    # overheads are per partition per step: three phases there, two exchanges here.
    _, overheads = calibration.apply(machine, phases=2)
    options = SimOptions(
        phases=2,
        sync="allreduce",
        seconds_per_work=calibration.task_scale,
        overheads=overheads,
    )
    runs = run_sweep(
        WorkloadSource(workload=workload), machine, ["geometric", "birdshot"], SIM_PPC,
        seed=seed, options=options,
    )  # fmt: skip
    out: dict[str, dict[int, dict]] = {}
    for run in runs:
        out.setdefault(run.strategy, {})[run.ppc] = run.summary()
    return out


def slice_figure(result_parts: dict[str, Any]) -> plt.Figure:
    """Three panels: placement LIF per step; measured busy per rank; simulated step time."""
    placement: DemoResult = result_parts["placement"]
    real, sim = result_parts["real"], result_parts["sim"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), constrained_layout=True)
    ax = axes[0]
    for name, mt in placement.metrics.items():
        ax.plot(mt.lif, label=f"{name} (mean {mt.lif_mean:.2f})")
    ax.set_title(f"1. placement: synthetic dam break, {placement.machine.nodes} EC2 nodes")
    ax.set_xlabel("step")
    ax.set_ylabel("LIF = max/mean − 1")
    ax.legend()
    ax = axes[1]
    width = 0.38
    for i, (label, summary) in enumerate(real.items()):
        ranks = np.arange(len(summary["busy"]))
        ax.bar(ranks + (i - 0.5) * width, summary["busy"], width, label=f"{label} busy")
        ax.bar(
            ranks + (i - 0.5) * width, summary["idle"], width, bottom=summary["busy"],
            alpha=0.35, label=f"{label} idle",
        )  # fmt: skip
    ax.set_xticks([0, 1], ["rank 0", "rank 1"])
    ax.set_ylabel("seconds")
    ax.set_title("2. real run on 2 MPI ranks: busy and idle")
    ax.legend(fontsize=8)
    ax = axes[2]
    for name, by_ppc in sim.items():
        ppcs = sorted(by_ppc)
        ax.plot(ppcs, [by_ppc[p]["step_time_mean"] * 1e3 for p in ppcs], "o-", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("partitions per core")
    ax.set_ylabel("simulated time per step (ms)")
    ax.set_title(f"3. simulated: {SIM_NODES} × ec2-c4.8xlarge (18 cores)")
    ax.legend()
    return fig


def run_slice(out_dir: Path, *, steps: int = 60, seed: int = 1, say: Say = print) -> SliceResult:
    """Run the three parts; write the figure and the real run's record into ``out_dir``."""
    from grapeshot.sim.calibrate import calibration_from_record

    out_dir.mkdir(parents=True, exist_ok=True)
    say("1/3 placing the synthetic dam break on 32 EC2 nodes (geometric, birdshot)")
    placement = run_demo(steps=200, seed=seed)
    node_load = save_figure(
        node_load_figure(
            {name: mt.node_load for name, mt in placement.metrics.items()},
            {name: mt.lif for name, mt in placement.metrics.items()},
            title=(
                f"synthetic dam break, {placement.workload.n_parts} partitions on "
                f"{placement.machine.nodes} × {placement.machine.name} "
                f"({placement.parts_per_core} per core)"
            ),
            units=placement.workload.units,
        ),
        out_dir / "placement-node-load.png",
    )
    say("2/3 running the shallow-water dam break on 2 MPI ranks (geometric 2x1, birdshot 16x16)")
    record = out_dir / "birdshot-run.h5"
    real = {
        "geometric": real_run("geometric", "2,1", steps, None),
        "birdshot": real_run("birdshot", "16,16", steps, record),
    }
    calibration = calibration_from_record(str(record))
    say("3/3 simulating the dam break on 32 x ec2-c4.8xlarge at 1, 2, 4, 8 partitions per core")
    sim = simulate_trace(fine_trace(steps), calibration, seed)
    parts = {"placement": placement, "real": real, "sim": sim}
    figure = save_figure(slice_figure(parts), out_dir / "demo.png")
    return SliceResult(placement, real, calibration, sim, figure, node_load)
