"""``grapeshot zmodel``: Beatnik's Z-Model of a Rayleigh-Taylor interface on MPI ranks."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from grapeshot.cli.output import console, emit_json, warn
from grapeshot.model.errors import GrapeshotError, InputError, check_int
from grapeshot.runtime.agreement import node_share, rank_zero_decides

HELP = """Run Beatnik's Z-Model of a Rayleigh-Taylor interface on MPI ranks.

Start it with `mpiexec -n R grapeshot zmodel ...`. The surface (n x n nodes, positions z and
vorticity w) is cut in Beatnik's 2-D blocks; every step is SSP-RK3 with halo exchanges, and
per order: low (Riesz transform by distributed FFT), medium (FFT + Birkhoff-Rott), high
(Birkhoff-Rott). --solver exact runs Beatnik's ring pass (all pairs); cutoff migrates points to
a spatial mesh of micro-partitions placed on ranks by --spatial-strategy. Defaults are
Beatnik's rocketrig defaults (docs/zmodel.md).

Example: mpiexec -n 4 grapeshot zmodel --order high --solver cutoff --mesh 64 --steps 20
--boundary free --init single --magnitude 0.1 --modes 9 --atwood 0.15 --mu 2 --epsilon 2
--cutoff 0.25 --spatial-parts 8,8 --spatial-strategy birdshot --json"""


def _parts(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        vals = [int(x) for x in text.replace("x", ",").split(",") if x.strip()]
    except ValueError:
        vals = []
    if len(vals) == 1:
        vals = vals * 2
    if len(vals) != 2 or min(vals) < 1:
        raise InputError("--spatial-parts", f"got {text!r}", "SX,SY or S, integers >= 1")
    return vals[0], vals[1]


# The options, one alias each: the command's signature is one line per option.
OrderOpt = Annotated[str, typer.Option("--order", help="low, medium or high.")]
SolverOpt = Annotated[str, typer.Option("--solver", help="Birkhoff-Rott solver: exact or cutoff.")]
MeshOpt = Annotated[int, typer.Option("--mesh", help="Nodes per dimension (Beatnik -n).")]
StepsOpt = Annotated[
    int | None, typer.Option("--steps", help="Time steps (default: to t = 2 tau).")
]
BoundaryOpt = Annotated[str, typer.Option("--boundary", help="periodic or free.")]
CutoffOpt = Annotated[float, typer.Option("--cutoff", help="Cutoff radius.")]
AtwoodOpt = Annotated[float, typer.Option("--atwood", help="Atwood number A.")]
GravityOpt = Annotated[float, typer.Option("--gravity", help="Gravity in g's.")]
MagnitudeOpt = Annotated[float, typer.Option("--magnitude", help="Initial amplitude.")]
ModesOpt = Annotated[
    float,
    typer.Option("--modes", help="Beatnik -p: wavelength (multi) or sech^2 coefficient."),
]
MuOpt = Annotated[float, typer.Option("--mu", help="Artificial viscosity coefficient.")]
EpsilonOpt = Annotated[float, typer.Option("--epsilon", help="Desingularisation.")]
InitOpt = Annotated[
    str, typer.Option("--init", help="multi (Beatnik cos) or single (Beatnik sech2).")
]
BoxOpt = Annotated[float, typer.Option("--box", help="Half-width B of the domain.")]
FftConfigOpt = Annotated[
    int,
    typer.Option(
        "--fft-config", help="heFFTe configuration 0..7 (4 all-to-all, 2 pencils, 1 reorder)."
    ),
]
SpatialPartsOpt = Annotated[
    str | None,
    typer.Option("--spatial-parts", help="Cutoff solver micro-partitions per axis, SX,SY."),
]
SpatialStrategyOpt = Annotated[
    str,
    typer.Option(
        "--spatial-strategy",
        help="beatnik (block layout), geometric, cyclic, "
        "sfc, birdshot, greedy (re-placed at every evaluation), or the dynamic reactive "
        "or treematch-lb (re-placed every --spatial-interval evaluations).",
    ),
]
SpatialIntervalOpt = Annotated[
    int | None,
    typer.Option(
        "--spatial-interval",
        help="Evaluations between calls of a dynamic --spatial-strategy "
        "(default: the strategy's own interval).",
    ),
]
ExchangeOpt = Annotated[
    str | None,
    typer.Option(
        "--exchange",
        help="grapeshot.exchange schedule of the cutoff solver's surface <-> space "
        "migrations and ghost sends: ac, lp, rsn, rsnh, drsn, nbx, alltoallv or neighbor "
        "(default: one MPI_Alltoallv each).",
    ),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of random strategies.")]
BeatnikCompatOpt = Annotated[
    bool,
    typer.Option("--beatnik-compat", help="Reproduce Beatnik's quirks Q1-Q2 (docs)."),
]
WriteViewsOpt = Annotated[
    Path | None, typer.Option("--write-views", help="Write Beatnik .view files here.")
]
VtkOpt = Annotated[Path | None, typer.Option("--vtk", help="Write VTK surfaces here.")]
VtkEveryOpt = Annotated[int, typer.Option("--vtk-every", help="VTK every k steps.")]
TraceOpt = Annotated[
    Path | None, typer.Option("--trace", help="Write the run as a workload (HDF5).")
]
AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (rank 0).")]


def zmodel_command(
    order: OrderOpt = "low",
    solver: SolverOpt = "exact",
    mesh: MeshOpt = 128,
    steps: StepsOpt = None,
    boundary: BoundaryOpt = "periodic",
    cutoff: CutoffOpt = 0.5,
    atwood: AtwoodOpt = 0.5,
    gravity: GravityOpt = 25.0,
    magnitude: MagnitudeOpt = 0.05,
    modes: ModesOpt = 1.0,
    mu: MuOpt = 1.0,
    epsilon: EpsilonOpt = 0.25,
    init: InitOpt = "multi",
    box: BoxOpt = 1.0,
    fft_config: FftConfigOpt = 6,
    spatial_parts: SpatialPartsOpt = None,
    spatial_strategy: SpatialStrategyOpt = "beatnik",
    spatial_interval: SpatialIntervalOpt = None,
    exchange: ExchangeOpt = None,
    seed: SeedOpt = 0,
    beatnik_compat: BeatnikCompatOpt = False,
    write_views: WriteViewsOpt = None,
    vtk: VtkOpt = None,
    vtk_every: VtkEveryOpt = 10,
    trace: TraceOpt = None,
    as_json: AsJsonOpt = False,
) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    try:
        import numpy as np

        from grapeshot.apps.zmodel.driver import run
        from grapeshot.apps.zmodel.output import gather_owned
        from grapeshot.apps.zmodel.params import ZModelParams

        params = ZModelParams(
            mesh=mesh, order=order, solver=solver, boundary=boundary, steps=steps,
            cutoff=cutoff, atwood=atwood, gravity=gravity, magnitude=magnitude, modes=modes,
            mu=mu, epsilon=epsilon, init=init, box=box, fft_config=fft_config,
            beatnik_compat=beatnik_compat,
        )  # fmt: skip
        check_int(vtk_every, "--vtk-every")
        spatial = _spatial(spatial_parts, spatial_strategy, seed, spatial_interval, exchange)
        _check_before_work(comm, mesh, {"--write-views": write_views, "--vtk": vtk}, trace)
        # A run that goes unstable overflows on every rank and in every kernel: one warning
        # at the end says so (_warn_unstable) instead of numpy's, source lines and all.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            rec, z, w, be = run(
                params, comm, spatial=spatial, views=write_views, vtk=vtk, vtk_every=vtk_every
            )
        zg, wg = gather_owned(be, z), gather_owned(be, w)
        if rec is not None and trace is not None:
            from grapeshot.apps.zmodel.trace import save_trace

            save_trace(trace, rec)
    except GrapeshotError as exc:
        if rank == 0:
            sys.stderr.write(f"grapeshot: error: {exc}\n")
        raise typer.Exit(2) from None
    if rec is None:
        return
    summary = _summary(rec, params, be, zg, wg, order=order, solver=solver, mesh=mesh,
                       boundary=boundary, fft_config=fft_config,
                       spatial_strategy=spatial_strategy, exchange=exchange,
                       written=[write_views, vtk, trace])  # fmt: skip
    _warn_unstable(zg, wg, order)
    if as_json:
        emit_json(summary)
        return
    _print_summary(summary, rec, params)


def _spatial(parts: str | None, strategy: str, seed: int, interval: int | None, exchange):
    """The cutoff solver's micro-partitions (``--spatial-*``, ``--exchange``), checked."""
    from grapeshot.apps.zmodel.cutoff import DYNAMIC_SPATIAL
    from grapeshot.apps.zmodel.driver import SpatialOptions

    if interval is not None and strategy not in DYNAMIC_SPATIAL:
        raise InputError(
            "--spatial-interval",
            f"given with --spatial-strategy {strategy}",
            f"a dynamic --spatial-strategy ({', '.join(DYNAMIC_SPATIAL)})",
        )
    return SpatialOptions(_parts(parts), strategy, seed, interval, exchange=exchange)


def _summary(rec: Any, params: Any, be: Any, zg: Any, wg: Any, **given: Any) -> dict[str, Any]:
    """What rank 0 reports of a run: ``given`` (the options it names: order, solver, mesh,
    boundary, fft_config, spatial_strategy, exchange, and the paths ``written``), and from
    the run's record ``rec``, its parameters, its backend ``be`` and the gathered surface
    ``zg`` and vorticity ``wg``: ranks, steps, seconds per step and per phase, the height,
    the vorticity sums, the points per rank at the last step."""
    import numpy as np

    from grapeshot.apps.zmodel.model import PHASES

    last = rec.rank_points[-1] if len(rec.rank_points) else np.zeros(rec.ranks)
    written = given.pop("written")
    return {
        "order": given["order"],
        "solver": given["solver"],
        "mesh": given["mesh"],
        "boundary": given["boundary"],
        "ranks": rec.ranks,
        "dims": list(rec.dims),
        "steps": params.n_steps,
        "dt": params.dt,
        "fft_config": given["fft_config"],
        "spatial_parts": list(rec.spatial_parts),
        "spatial_strategy": given["spatial_strategy"],
        "spatial_moves": be.dynamic.moves if be.dynamic is not None else None,
        "exchange": given["exchange"] or "mpi-alltoallv",
        "seconds_per_step": float(rec.step_seconds.mean()) if params.n_steps else 0.0,
        "phase_seconds": {
            p: float(rec.phase_times[:, :, i].sum(axis=0).max()) for i, p in enumerate(PHASES)
        },
        "max_height": float(np.abs(zg[2]).max()),
        "sum_w": [float(wg[0].sum()), float(wg[1].sum())],
        "points_per_rank_last": {
            "min": float(last.min()),
            "mean": float(last.mean()),
            "max": float(last.max()),
        },
        "written": [str(p) for p in written if p is not None],
    }


def _print_summary(summary: dict[str, Any], rec: Any, params: Any) -> None:
    """Rank 0's lines: the run, its seconds per phase, what it wrote."""
    console.print(
        f"zmodel {summary['order']}/{summary['solver']} {summary['boundary']} "
        f"{summary['mesh']}x{summary['mesh']} on {rec.ranks} ranks {rec.dims}: "
        f"{params.n_steps} steps, {summary['seconds_per_step']:.4f} s/step, "
        f"max |z3| {summary['max_height']:.6g}",
        highlight=False,
        markup=False,
    )
    console.print(
        "phases (s, max over ranks): "
        + ", ".join(f"{k} {v:.3f}" for k, v in summary["phase_seconds"].items()),
        highlight=False,
    )
    for p in summary["written"]:
        console.print(f"written: {p}", highlight=False)


def _warn_unstable(zg: Any, wg: Any, order: str) -> None:
    """Say on stderr when the final surface ``zg`` or vorticity ``wg`` (numpy arrays) is not
    finite: the run blew up."""
    import numpy as np

    if np.isfinite(zg).all() and np.isfinite(wg).all():
        return
    hint = (
        "the low-order model holds for small amplitudes only, and the defaults grow the "
        "initial one about 190-fold by t = 2 tau: try --order medium or high, fewer --steps "
        "or a smaller --magnitude"
        if order == "low"
        else "try fewer --steps, a smaller --magnitude or a larger --mu"
    )
    warn("zmodel", f"the interface is not finite at the end (NaN or infinite values): {hint}")


def _check_before_work(
    comm: Any, mesh: int, folders: dict[str, Path | None], trace: Path | None
) -> None:
    """Refuse, before the run starts, an output rank 0 cannot write (the view and VTK
    folders, the trace file) or a mesh whose points do not fit in this node's memory (each
    rank holds its share of the ``mesh²`` points). Every rank takes rank 0's verdict.

    Raises
    ------
    InputError
        The same one on every rank.
    """
    from grapeshot.model.atomic import check_output_path
    from grapeshot.model.memory import ZMODEL_BYTES_PER_POINT, check_memory

    share = node_share(comm)

    def check() -> None:
        for option, folder in folders.items():
            if folder is not None:
                check_output_path(folder, option, folder=True)
        if trace is not None:
            check_output_path(trace, "--trace")
        need = math.ceil(ZMODEL_BYTES_PER_POINT * mesh * mesh * share)
        check_memory(need, f"--mesh {mesh}", "for the surface's points", "a smaller --mesh")

    rank_zero_decides(comm, check)


zmodel_command.__doc__ = HELP


def register(app: typer.Typer) -> None:
    """Add ``zmodel`` to the command line."""
    app.command("zmodel", help=HELP)(zmodel_command)
