"""Memory needed, estimated before the allocation; refused when the machine lacks it.

Every option that sizes an array (a synthetic SPEC's ``parts=`` and ``steps=``, ``--parts``,
``--cells``, ``--ppc``, ``--oversub``, ``jobs generate --jobs``) is checked here before the
array exists: :func:`check_memory` compares an estimate of the command's peak resident
memory with what the machine has available (:func:`available_memory`) and refuses, naming
the option and both figures, with one line and exit status 2, instead of a ``MemoryError``
traceback after a long wait, or the kernel's out-of-memory killer.

The estimates are models of the peak resident memory, fitted to measurements of the real
commands (``/usr/bin/time -f %M`` at two or three sizes each, issue 27): they follow the
arrays each stage holds at once, and land within about 15 % of the measured peak, above it
more often than below. A refusal therefore means the work would not fit; work just under the
limit may still push other programs into swap.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grapeshot.model.errors import InputError

#: Bytes of one float64 or int64.
WORD = 8
#: Peak bytes per halo message while :func:`grapeshot.model.workload.grid_halo` builds the
#: graph: its CSR, written row by row (16.3 to 17.0 measured on 2-D and 3-D grids; 110 to 122
#: with the former per-offset arrays and the sort that merged duplicate pairs, which only a
#: periodic grid needs now; issue 25).
HALO_BUILD_BYTES_PER_MESSAGE = 20
#: Bytes per halo message a built workload keeps (destination and bytes, int64 each).
HALO_BYTES_PER_MESSAGE = 2 * WORD
#: Bytes per partition outside the cost array: the halo's row pointers, the placement, the
#: per-partition sums of the metrics.
BYTES_PER_PARTITION = 64
#: Bytes per task of the cluster simulator (a partition's step, per phase): its start and
#: end times and its core (int32); its dependencies and the event queue are kept per
#: partition, and the result's sums are made without per-task arrays (20.6 measured: 16,384
#: partitions on 128 nodes, 100 and 400 steps, beside the workload's cost; issue 25).
SIM_BYTES_PER_TASK = 24
#: Bytes per task of a simulated timeline's window: the task's event and its messages'
#: records while the run is recorded, then its Chrome-trace event (1,000 to 1,300 measured).
TIMELINE_BYTES_PER_TASK = 1_400
#: Bytes per partition per step of a real or serial run's record (``run``, ``trace``): a
#: task's ten 8-byte columns (rank, partition, step, phase, thread, start, end, CPU, wait,
#: halo seconds), which also covers the trace's cost and work.
RECORD_BYTES_PER_TASK = 80
#: Bytes per partition of placing a bare grid (``place --grid``) and writing it in any
#: format (the text is written a million partitions at a time): the placement (int32) and a
#: static strategy's work arrays (6 to 17 measured at 100,000,000 partitions, cyclic the
#: most); and of printing it whole (``--full --json``), its whole list of Python integers and
#: its text in memory at once (58 measured).
GRID_BYTES_PER_PARTITION = 24
GRID_WHOLE_BYTES_PER_PARTITION = 96
#: Bytes per byte of a user's text file (CSV, one value a line) while it is read: its bytes
#: and its decoded text, then the rows of one chunk and the columns (3.7 measured for a
#: 565 MB ``.part`` placement of 10^8 lines, 4.5 for a placement CSV of 10^7 rows).
TEXT_READ_BYTES_PER_BYTE = 6
#: The same for a JSON file read by ``json.loads``, whose every number becomes a Python object
#: in one list at once (14.6 measured for a 664 MB placement of 10^8 partitions). A placement
#: whose lists the compiled scanner takes (``model/json_ints.py``) is weighed at
#: :data:`TEXT_READ_BYTES_PER_BYTE` first (2.4 measured, the same file), and at this only
#: when it goes to ``json.loads``.
JSON_READ_BYTES_PER_BYTE = 16
#: Bytes per generated job of ``jobs generate`` (its columns and the SWF text; 490 measured).
BYTES_PER_JOB = 512
#: Bytes per slot of TreeMatch's oversubscribed tree (``cores × --oversub`` slots; 30 to
#: 50 measured).
TREEMATCH_BYTES_PER_SLOT = 64
#: Bytes per surface point of the Z-Model (``zmodel --mesh N``: N² points; its fields, the
#: FFT's buffers and the solver's work arrays; 460 measured at meshes of 512 to 2048).
ZMODEL_BYTES_PER_POINT = 500
#: Dense halo neighbours of a partition of a 2-D or 3-D grid with corners (8 or 26): the
#: bound used when the grid is not known yet.
NEIGHBOURS = {2: 8, 3: 26}


@dataclass(frozen=True)
class AppFootprint:
    """Peak bytes of a built-in app's program per cell and per partition (``--cells``,
    ``--parts``), measured at two sizes each: with ``grapeshot trace`` (the serial
    executor) or summed over the ranks of ``mpiexec -n 2 grapeshot run`` (the task runtime).

    Attributes
    ----------
    per_cell
        Bytes per cell of the whole domain (fields, particles, ghost layers).
    per_part
        Bytes per partition (its block, halo plans and buffers), whatever the cells.
    per_part_by_scene
        Scenes whose partitions cost a different amount (CommBench's chunk sizes).
    """

    per_cell: int
    per_part: int
    per_part_by_scene: tuple[tuple[str, int], ...] = ()

    def part_bytes(self, scene: str | None) -> int:
        """Bytes per partition in ``scene``."""
        return dict(self.per_part_by_scene).get(scene or "", self.per_part)


#: The built-in apps' footprints under the serial executor (``trace``, ``run --executor
#: serial``; measured peaks, rounded up; issue 27). CommBench's partitions each hold their two
#: chunks (1 MiB ± 50 % by default, 64 KiB in ``small``).
APP_FOOTPRINTS: dict[str, AppFootprint] = {
    "swe": AppFootprint(per_cell=160, per_part=26_000),
    "sph": AppFootprint(per_cell=450, per_part=12_000),
    "wavefront": AppFootprint(per_cell=64, per_part=10_000),
    "commbench": AppFootprint(
        per_cell=40, per_part=2_300_000, per_part_by_scene=(("small", 150_000),)
    ),
    "flip": AppFootprint(per_cell=280, per_part=400),
    "zmodel": AppFootprint(per_cell=700, per_part=400),
}
#: The runnable apps' footprints on MPI ranks (``run``), all ranks together: each partition's
#: halo plans, send and receive arenas and messages in flight, about 1.3 to 3 times the
#: serial figures (CommBench's chunks are sent, received and folded: 6.1 MB a partition
#: measured by default, 320 KB in ``small``).
RUN_FOOTPRINTS: dict[str, AppFootprint] = {
    "swe": AppFootprint(per_cell=360, per_part=42_000),
    "sph": AppFootprint(per_cell=450, per_part=36_000),
    "wavefront": AppFootprint(per_cell=96, per_part=16_000),
    "commbench": AppFootprint(
        per_cell=40, per_part=7_000_000, per_part_by_scene=(("small", 370_000),)
    ),
}
#: Bytes per cell of the whole domain that rank 0 gathers at the end of a ``run`` (the final
#: fields, for the digest): on top of its share (260 MB measured for 4.2 M shallow-water
#: cells).
GATHER_BYTES_PER_CELL = 64
#: A user's program (``--app FILE.py:FACTORY``) has no footprint of its own: it is sized from
#: one partition's block (``init_block``) and final fields (``output_fields``), times the
#: partitions. Measured on ``examples/program/heat.py`` (8192² cells as 16×16 and 64×64
#: partitions, 1024² as 64×64, serial and on 2 ranks; issue 38): the blocks are held twice at
#: the peak (the task runtime's flat arrays beside them, the serial executor's copies) ...
USER_BLOCK_COPIES = 2
#: ... rank 0's gathering holds the final fields 2 (serial) to 2.5 (2 ranks) times over
#: (each partition's copy, the assembled domain, the messages bringing them) ...
USER_GATHER_COPIES = 3
#: ... and each partition about 10 KB besides (its box, plans and halo buffers, more with
#: larger faces). Together: 2 to 18 % above the peaks measured at 8192², 35 % at 1024².
USER_BYTES_PER_PARTITION = 16_000


def _meminfo_available(path: str = "/proc/meminfo") -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes (Linux), else None."""
    with contextlib.suppress(OSError, ValueError), open(path, encoding="ascii") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def _read_int(path: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        text = path.read_text(encoding="ascii").strip()
        return None if text == "max" else int(text)
    return None


def _cgroup_room() -> int | None:
    """Bytes this process's control group may still allocate (its limit less its use), or
    None without a limit. A container's limit is often far below the machine's memory."""
    base = Path("/sys/fs/cgroup")
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text(encoding="ascii").splitlines():
            hierarchy, controllers, rel = line.split(":", 2)
            if hierarchy == "0" and controllers == "":  # cgroup v2, the unified hierarchy
                folder = base / rel.lstrip("/")
                limit, used = _read_int(folder / "memory.max"), _read_int(folder / "memory.current")
            elif "memory" in controllers.split(","):  # cgroup v1
                folder = base / "memory" / rel.lstrip("/")
                limit = _read_int(folder / "memory.limit_in_bytes")
                used = _read_int(folder / "memory.usage_in_bytes")
            else:
                continue
            # v1 reports "no limit" as a number near 2**63.
            if limit is not None and limit < 1 << 60:
                return max(limit - (used or 0), 0)
    return None


def available_memory() -> int | None:
    """Bytes this process can allocate now without swapping, or None if the system says not.

    The least of the kernel's ``MemAvailable`` (free memory plus the caches it can drop;
    ``os.sysconf`` free pages where ``/proc/meminfo`` is missing) and the room left under the
    process's control-group limit (containers, batch jobs).
    """
    found = [x for x in (_meminfo_available(), _cgroup_room()) if x is not None]
    if not found:
        with contextlib.suppress(AttributeError, ValueError, OSError):
            pages = os.sysconf("SC_AVPHYS_PAGES")
            size = os.sysconf("SC_PAGE_SIZE")
            if pages > 0 and size > 0:
                found.append(pages * size)
    return min(found) if found else None


def format_bytes(n: int) -> str:
    """``1536`` → ``"1.5 KiB"``, ``80 * 2**30`` → ``"80.0 GiB"`` (binary units)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def check_memory(need: int, where: str, what: str, expected: str) -> None:
    """Refuse ``need`` bytes if the machine has less available (:func:`available_memory`).

    Parameters
    ----------
    need
        The estimated peak, bytes (a Python int: never overflows).
    where
        The option whose value sets the size (``"--synthetic binary:parts=100000x100000"``).
    what
        What needs it, completing "needs about N GiB (N bytes) ...": ``"to build the
        workload"``.
    expected
        What would fit, for the message's ``expected`` part.

    Raises
    ------
    InputError
        ``"<where>: needs about 745.1 GiB (800,000,000,000 bytes) <what>, more than the 21.3
        GiB this machine has available; expected <expected>"``.
    """
    room = available_memory()
    if room is None or need <= room:
        return
    raise InputError(
        where,
        f"needs about {format_bytes(need)} ({need:,} bytes) {what}, more than the "
        f"{format_bytes(room)} this machine has available",
        expected,
    )


def grid_messages(parts_shape: Sequence[int], *, corners: bool = True) -> int:
    """Halo messages of a non-periodic stencil on a partition grid, without building it.

    A partition sends to every neighbour inside the grid: with corners, ``Π(3k − 2) − Πk``
    over the axes' partition counts ``k`` (the neighbour offsets in ``{−1, 0, 1}^d`` less
    the partition itself); faces only, ``Σ_axes 2 (k_a − 1) Π_{b≠a} k_b``.
    """
    ks = [int(k) for k in parts_shape]
    n = math.prod(ks)
    if corners:
        return math.prod(3 * k - 2 for k in ks) - n
    return sum(2 * (k - 1) * n // k for k in ks)


def workload_bytes(n_parts: int, steps: int, messages: int) -> int:
    """Bytes a built workload keeps: its cost (steps × partitions), halo and row pointers."""
    return (
        WORD * steps * n_parts + HALO_BYTES_PER_MESSAGE * messages + BYTES_PER_PARTITION * n_parts
    )


def synthetic_bytes(
    kind: str, parts_shape: Sequence[int], steps: int, domain_shape: Sequence[int]
) -> int:
    """Peak bytes while a synthetic workload of ``kind`` is built: its cost array, the halo
    graph being built, and for the dam break its wet-cell table (cells along x × partitions
    along y, three float64 arrays at once)."""
    n = math.prod(int(k) for k in parts_shape)
    build = HALO_BUILD_BYTES_PER_MESSAGE * grid_messages(parts_shape) + BYTES_PER_PARTITION * n
    if kind == "dambreak":
        build = max(build, 3 * WORD * int(domain_shape[0]) * int(parts_shape[1]))
    return WORD * steps * n + build


def placement_bytes(n_parts: int, steps: int, messages: int, nodes: int, *, replay: bool) -> int:
    """Peak bytes of placing a built workload and measuring it (``place``): the workload,
    the metrics' per-step arrays over partitions (two float64 at once) and over nodes, and a
    replayed dynamic strategy's placement per step."""
    metrics = 2 * WORD * steps * n_parts + 4 * WORD * steps * nodes
    history = WORD * steps * n_parts if replay else 0
    return workload_bytes(n_parts, steps, messages) + metrics + history


def grid_placement_bytes(n_parts: int, *, whole: bool) -> int:
    """Peak bytes of placing a bare grid of ``n_parts`` partitions (``place --grid``) and
    writing it, or printing it whole as JSON if ``whole``."""
    return (GRID_WHOLE_BYTES_PER_PARTITION if whole else GRID_BYTES_PER_PARTITION) * n_parts


def simulation_bytes(n_parts: int, steps: int, phases: int, nodes: int, *, window: int = 0) -> int:
    """Peak bytes of the simulator running one placement, beyond its workload: its tasks
    (partitions × steps × phases), the result's per-step arrays over nodes, and the records
    and Chrome-trace events of a timeline of ``window`` steps."""
    tasks = SIM_BYTES_PER_TASK * n_parts * steps * phases
    timeline = TIMELINE_BYTES_PER_TASK * n_parts * window * phases
    return tasks + 8 * WORD * steps * nodes + timeline


def program_bytes(
    app: str,
    scene: str | None,
    parts: Sequence[int],
    cells: Sequence[int] | None,
    steps: int,
    *,
    on_ranks: bool = False,
) -> int | None:
    """Peak bytes of a built-in app's program and its recorded run, or None for an app whose
    footprint is unknown (a user's program).

    ``on_ranks`` counts the MPI task runtime's footprint (:data:`RUN_FOOTPRINTS`, all ranks
    together) instead of the serial executor's. Without ``cells`` (the scene's default) the
    cells are counted as the partitions: every partition holds at least one cell, and the
    scenes' defaults are small.
    """
    footprint = (RUN_FOOTPRINTS if on_ranks else APP_FOOTPRINTS).get(app)
    if footprint is None:
        return None
    n = math.prod(int(k) for k in parts)
    n_cells = math.prod(int(c) for c in cells) if cells is not None else n
    recorded = RECORD_BYTES_PER_TASK * steps * n
    return footprint.per_cell * n_cells + footprint.part_bytes(scene) * n + recorded


def check_program_memory(
    app: str,
    scene: str | None,
    parts: Sequence[int],
    cells: Sequence[int] | None,
    steps: int,
    *,
    where: str,
    share: float | None = None,
) -> None:
    """Refuse a built-in app's ``--parts``/``--cells`` whose program (and recorded run)
    needs more memory than the machine has: ``trace`` before it builds the program, ``run``
    before any rank does. A user's program has no known footprint: it is sized from one of
    its partitions (:func:`check_user_program_memory`).

    Parameters
    ----------
    app, scene, parts, cells, steps
        The program: a built-in app's name and scene, partitions and cells per axis (cells
        ``None``: the scene's default), steps to run.
    where
        The options as the user gave them, for the message (``"--parts 4,4 --cells
        100000"``); `` --steps N`` is added when the run's record is most of the need.
    share
        For ``run`` on MPI ranks: the part of the program this machine holds (``L / N`` for
        ``L`` of the ``N`` ranks on this node), plus the whole domain rank 0 gathers at the
        end. ``None``: the whole program in this process (the serial executor).

    Raises
    ------
    InputError
        Naming ``where``.
    """
    whole = program_bytes(app, scene, parts, cells, steps, on_ranks=share is not None)
    if whole is None:
        return
    need = whole
    if share is not None:
        n_cells = math.prod(int(c) for c in (cells if cells is not None else parts))
        need = math.ceil(whole * share) + GATHER_BYTES_PER_CELL * n_cells
    _check_program_need(
        need, whole, parts, steps, where=where, what=f"{app}'s fields and partitions"
    )


def user_program_bytes(
    block_bytes: int, output_bytes: int, n_parts: int, steps: int
) -> tuple[int, int]:
    """Peak bytes of a user's program and its recorded run, sized from one partition:
    ``(held, gathered)``.

    Parameters
    ----------
    block_bytes, output_bytes
        Bytes of one partition's block (``init_block``) and of its final fields
        (``output_fields``); 0 before any is built (the partitions alone are counted).
    n_parts, steps
        Partitions, and steps the run records.

    Returns
    -------
    held
        Bytes the partitions take, all ranks together: :data:`USER_BLOCK_COPIES` blocks,
        :data:`USER_BYTES_PER_PARTITION` and the run's record each.
    gathered
        Bytes rank 0 holds at the end, gathering the final fields
        (:data:`USER_GATHER_COPIES` times them).
    """
    per_part = (
        USER_BLOCK_COPIES * block_bytes + USER_BYTES_PER_PARTITION + RECORD_BYTES_PER_TASK * steps
    )
    return per_part * n_parts, USER_GATHER_COPIES * output_bytes * n_parts


def check_user_program_memory(
    name: str,
    parts: Sequence[int],
    steps: int,
    *,
    where: str,
    block_bytes: int = 0,
    output_bytes: int = 0,
    share: float | None = None,
) -> None:
    """Refuse a user's program (:func:`user_program_bytes`) that needs more memory than the
    machine has, in the words and limits of :func:`check_program_memory`: before its
    partitions' boxes are built (``block_bytes=0``), then from one partition's block, before
    the others are built.

    Parameters
    ----------
    name
        The program's name, for the message.
    parts, steps, where, share
        As :func:`check_program_memory`'s (``share``: the part of the partitions this
        machine holds, plus the whole gathering; ``None``: all of them in this process).
    block_bytes, output_bytes
        One partition's, as :func:`user_program_bytes` takes them.

    Raises
    ------
    InputError
        Naming ``where``; the message says what one partition's block weighs.
    """
    held, gathered = user_program_bytes(block_bytes, output_bytes, math.prod(parts), steps)
    need = (held if share is None else math.ceil(held * share)) + gathered
    what = f"{name}'s fields and partitions"
    if block_bytes:
        what += f" ({format_bytes(block_bytes)} a partition's block)"
    _check_program_need(need, held + gathered, parts, steps, where=where, what=what)


def _check_program_need(
    need: int, whole: int, parts: Sequence[int], steps: int, *, where: str, what: str
) -> None:
    """:func:`check_memory` in the words of a program's refusal: ``what`` needs ``need``
    bytes of the ``whole`` program's (``--steps`` is named when the record is most of it)."""
    if 2 * RECORD_BYTES_PER_TASK * steps * math.prod(parts) > whole:  # the steps dominate
        where += f" --steps {steps}"
    check_memory(
        need,
        where,
        f"for {what}",
        "fewer partitions (--parts) or cells (--cells)",
    )
