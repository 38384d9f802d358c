"""The program API: how a mini-app is written so that any executor can run it.

A :class:`Program` splits a structured 2-D or 3-D domain of cells into a grid of
micro-partitions. Each partition owns a :class:`Box` of cells and a *block*: a dict of numpy
arrays holding its state (grid fields with ``ghost`` layers on every side, particle arrays,
anything the app needs). Every step runs the program's :class:`Phase` list in order; for each
phase, on every partition:

0. **graph** (optional, :class:`GraphExchange`): each partition packs a buffer for each of
   its fixed destination partitions, anywhere in the grid; every executor delivers them and
   each partition unpacks what it got, in sender order (CommBench's messages).
1. **exchange** (optional): each partition packs, for each neighbour, one flat numpy buffer
   (:attr:`Exchange.pack`); the executor delivers it and the neighbour unpacks it
   (:attr:`Exchange.unpack`) — by memory copy on one node, by MPI between nodes. Then
   :attr:`Exchange.boundary` fills the ghost cells on the domain's own walls.
2. **kernel**: ``kernel(block, box, ctx)`` updates the block. Kernels call numba functions
   compiled with ``nogil=True`` so a runtime can run several partitions at once in threads.
   A *plain kernel* (:attr:`Phase.fields` given) is instead called
   ``kernel(*[block[f] for f in fields], box.kernel_box, params)``: a numba function of the
   block's arrays, a :class:`KernelBox` and the step's float64 parameters, which the task
   runtime runs on many partitions in one compiled call (no :class:`Batch` to write).
3. **reduce** (optional): the kernel's return value is combined over all partitions with
   ``min``, ``max`` or ``sum`` (``sum`` in partition-id order, so every executor gets the
   same bits) and published as ``ctx.values[name]`` for the following phases.
4. **migrate** (optional): items that left the partition (particles) are taken out with
   :attr:`Migration.emigrate` and handed to the neighbour that owns them now.

Executors (the serial reference in :mod:`grapeshot.runtime.serial`, the MPI runtime, the
simulator) only move buffers and call these functions in this order; they never know the
physics. A neighbour is named by its *offset* in the partition grid, a tuple in
``{-1, 0, 1}^ndim``; offsets are always visited in :func:`neighbour_offsets` order.
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property, lru_cache
from typing import NamedTuple

import numpy as np

from grapeshot.model.errors import GrapeshotError, InputError, exception_line, raised_at
from grapeshot.model.workload import check_grid, partition_bounds

Block = dict[str, np.ndarray]
Offset = tuple[int, ...]


@cache
def neighbour_offsets(ndim: int) -> tuple[Offset, ...]:
    """All ``3**ndim - 1`` neighbour offsets in the fixed order executors use."""
    return tuple(o for o in itertools.product((-1, 0, 1), repeat=ndim) if any(o))


@cache
def face_offsets(ndim: int) -> tuple[Offset, ...]:
    """The ``2 * ndim`` face neighbours (one non-zero axis), in :func:`neighbour_offsets` order."""
    return tuple(o for o in neighbour_offsets(ndim) if sum(map(abs, o)) == 1)


class KernelBox(NamedTuple):
    """What a plain kernel knows of its partition: plain integers, so numba takes it whole.

    Every attribute but ``part`` and ``ghost`` is a tuple with one entry per axis. A padded
    field's interior on axis ``a`` is ``ghost .. ghost + shape[a]``; global cell ``lo[a] + i``
    is local index ``ghost + i``; the partition touches the domain's low wall on axis ``a``
    when ``lo[a] == 0`` and its high wall when ``hi[a] == domain[a]``.
    """

    part: int
    lo: tuple[int, ...]
    hi: tuple[int, ...]
    shape: tuple[int, ...]
    ghost: int
    domain: tuple[int, ...]


@dataclass(frozen=True)
class Box:
    """The cells one partition owns.

    Attributes
    ----------
    part
        Partition id (C-order flattening of ``index`` over ``parts_shape``).
    index
        Position in the partition grid.
    lo, hi
        First cell and one past the last cell on each axis (global cell indices).
    parts_shape, domain_shape
        The grids it belongs to.
    ghost
        Ghost layers around the block's grid fields.
    periodic
        Per axis, whether the domain wraps around it (empty: no axis does); see
        :attr:`Program.periodic`.
    """

    part: int
    index: tuple[int, ...]
    lo: tuple[int, ...]
    hi: tuple[int, ...]
    parts_shape: tuple[int, ...]
    domain_shape: tuple[int, ...]
    ghost: int
    periodic: tuple[bool, ...] = ()

    @cached_property
    def shape(self) -> tuple[int, ...]:
        """Interior cells per axis."""
        return tuple(h - lo for lo, h in zip(self.lo, self.hi, strict=True))

    @cached_property
    def padded_shape(self) -> tuple[int, ...]:
        """Cells per axis including ghost layers on both sides."""
        return tuple(n + 2 * self.ghost for n in self.shape)

    @property
    def ndim(self) -> int:
        """2 or 3."""
        return len(self.lo)

    def neighbour(self, offset: Offset) -> int | None:
        """Partition id at ``offset``, or ``None`` past the domain's edge. Across a periodic
        axis the edge wraps: the last partition's neighbour is the first, and a partition
        spanning the whole axis is its own neighbour there."""
        part = 0
        wraps = self.periodic
        for a, (i, o, k) in enumerate(zip(self.index, offset, self.parts_shape, strict=True)):
            j = i + o
            if j < 0 or j >= k:
                if not (wraps and wraps[a]):
                    return None
                j %= k
            part = part * k + j  # C-order flattening, without numpy's per-call overhead
        return part

    def at_wall(self, axis: int, side: int) -> bool:
        """Whether the box touches the domain's low (``side=-1``) or high (``+1``) wall (a
        periodic axis has none)."""
        if self.periodic and self.periodic[axis]:
            return False
        return self.index[axis] == (0 if side < 0 else self.parts_shape[axis] - 1)

    def interior(self) -> tuple[slice, ...]:
        """Slices selecting the interior of a padded grid field."""
        g = self.ghost
        return tuple(slice(g, g + n) for n in self.shape)

    @cached_property
    def kernel_box(self) -> KernelBox:
        """This box as a plain kernel sees it."""
        return KernelBox(self.part, self.lo, self.hi, self.shape, self.ghost, self.domain_shape)


def check_periodic(
    periodic: Sequence[bool], ndim: int, where: str = "periodic"
) -> tuple[bool, ...]:
    """``periodic`` as one ``bool`` per axis (empty: no axis wraps).

    Raises
    ------
    InputError
        Neither empty nor ``ndim`` booleans.
    """
    try:
        flags = tuple(periodic)
    except TypeError:
        flags = None
    if (
        flags is None
        or (flags and len(flags) != ndim)
        or not all(isinstance(f, bool | np.bool_) for f in flags)
    ):
        raise InputError(
            where,
            f"got {periodic!r}",
            f"one True or False per axis ({ndim}), e.g. (True,) * {ndim}",
        )
    return tuple(bool(f) for f in flags) if any(flags) else ()


def partition_boxes(
    domain_shape: tuple[int, ...],
    parts_shape: tuple[int, ...],
    ghost: int,
    periodic: Sequence[bool] = (),
) -> list[Box]:
    """Every partition's :class:`Box`, in partition-id order; ``periodic`` as
    :attr:`Program.periodic`."""
    check_grid(domain_shape, parts_shape, "--parts")
    shapes = (tuple(int(n) for n in domain_shape), tuple(int(k) for k in parts_shape))
    wraps = check_periodic(periodic, len(shapes[1]))
    return list(_boxes(*shapes, int(ghost), wraps))


@lru_cache(maxsize=4)
def _boxes(
    domain_shape: tuple[int, ...],
    parts_shape: tuple[int, ...],
    ghost: int,
    periodic: tuple[bool, ...] = (),
):
    # A run asks for its boxes several times (each rank's runtime, its records, the
    # gathering); boxes are immutable, so one tuple serves them all.
    bounds = partition_bounds(domain_shape, parts_shape)
    for axis, b in enumerate(bounds):
        if np.diff(b).min() < ghost:
            raise InputError(
                "--parts",
                f"gives partitions of {int(np.diff(b).min())} cells on axis {axis}",
                f"at least {ghost} cells (the ghost width) per partition",
            )
    return tuple(
        _box_at(part, index, bounds, parts_shape, domain_shape, ghost, periodic)
        for part, index in enumerate(itertools.product(*(range(k) for k in parts_shape)))
    )


def _box_at(part, index, bounds, parts_shape, domain_shape, ghost, periodic) -> Box:
    """Partition ``part`` at ``index`` of the grid whose cell ``bounds`` per axis are given."""
    lo = tuple(int(bounds[a][i]) for a, i in enumerate(index))
    hi = tuple(int(bounds[a][i + 1]) for a, i in enumerate(index))
    return Box(part, index, lo, hi, tuple(parts_shape), tuple(domain_shape), ghost, periodic)


def largest_box(program: Program) -> Box:
    """The box of ``program``'s partition with the most cells (the first such), built alone:
    sizing a program needs one box, not the list of its million."""
    domain = tuple(int(n) for n in program.domain_shape)
    parts = tuple(int(k) for k in program.parts_shape)
    check_grid(domain, parts, "--parts")
    bounds = partition_bounds(domain, parts)
    index = tuple(int(np.argmax(np.diff(b))) for b in bounds)
    part = int(np.ravel_multi_index(index, parts))
    wraps = check_periodic(program.periodic, len(parts))
    return _box_at(part, index, bounds, parts, domain, int(program.ghost), wraps)


def halo_slab(box: Box, offset: Offset, width: int, ghost_side: bool) -> tuple[slice, ...]:
    """Slices of the cells sent towards ``offset`` (interior) or received from it (ghost)."""
    g = box.ghost
    out = []
    for o, n in zip(offset, box.shape, strict=True):
        if o == 0:
            out.append(slice(g, g + n))
        elif ghost_side:
            out.append(slice(g - width, g) if o < 0 else slice(g + n, g + n + width))
        else:
            out.append(slice(g, g + width) if o < 0 else slice(g + n - width, g + n))
    return tuple(out)


def grid_pack(fields: Sequence[str], width: int) -> Callable[[Block, Box, Offset], np.ndarray]:
    """A packer for grid fields: the ``width`` interior layers facing the neighbour."""
    slabs: dict[tuple[int, Offset], tuple[slice, ...]] = {}  # plan once, pack every step

    def pack(block: Block, box: Box, offset: Offset) -> np.ndarray:
        sl = slabs.get((box.part, offset))
        if sl is None:
            sl = slabs[(box.part, offset)] = halo_slab(box, offset, width, ghost_side=False)
        if len(fields) == 1:
            return block[fields[0]][sl].flatten()  # a copy: the kernel goes on writing
        return np.concatenate([block[f][sl].ravel() for f in fields])

    return pack


def grid_unpack(
    fields: Sequence[str], width: int
) -> Callable[[Block, Box, Offset, np.ndarray], None]:
    """The matching unpacker: fills the ghost layers on the neighbour's side."""
    slabs: dict[tuple[int, Offset], tuple[slice, ...]] = {}

    def unpack(block: Block, box: Box, offset: Offset, payload: np.ndarray) -> None:
        sl = slabs.get((box.part, offset))
        if sl is None:
            sl = slabs[(box.part, offset)] = halo_slab(box, offset, width, ghost_side=True)
        start = 0
        for f in fields:
            target = block[f][sl]
            stop = start + target.size
            block[f][sl] = payload[start:stop].reshape(target.shape)
            start = stop

    return unpack


@dataclass(frozen=True)
class Exchange:
    """A halo exchange before a phase.

    Parameters
    ----------
    fields
        Names of the block entries exchanged.
    width
        Ghost width exchanged, cells (``<= program.ghost``).
    pack, unpack
        Custom packers (particles); ``None`` uses :func:`grid_pack` / :func:`grid_unpack`.
    boundary
        Fills ghost cells on the domain's walls after unpacking (reflection, inflow, ...).
    pack_all
        Optional, with ``pack``: ``pack_all(block, box, offsets)``, the list of what ``pack``
        returns for each of ``offsets``, in one call. The MPI task runtime, which packs every
        buffer of a partition at once, uses it when given: a particle app then sorts a
        partition's particles into all its layers in one compiled pass instead of one
        Python call per neighbour.
    corners
        ``False``: only the ``2 * ndim`` face neighbours exchange (:func:`face_offsets`), for
        stencils that never read the ghost cells in the corners (a 5-point Laplacian); the
        corner ghosts then keep whatever they held. Grid fields only (no custom packers).
    """

    fields: tuple[str, ...]
    width: int = 1
    pack: Callable[[Block, Box, Offset], np.ndarray] | None = None
    unpack: Callable[[Block, Box, Offset, np.ndarray], None] | None = None
    boundary: Callable[[Block, Box], None] | None = None
    pack_all: Callable[[Block, Box, Sequence[Offset]], list[np.ndarray]] | None = None
    corners: bool = True

    def __post_init__(self) -> None:
        if self.pack_all is not None and self.pack is None:
            raise ValueError("Exchange.pack_all is a fast path of pack: give pack as well")
        if not self.corners and (self.pack is not None or self.unpack is not None):
            raise ValueError(
                "Exchange(corners=False) is for grid fields: custom packers get every neighbour"
            )

    @property
    def grid_fields(self) -> tuple[str, ...]:
        """The fields the grid packer slices out of padded blocks: all of :attr:`fields`, or
        none with a custom ``pack`` (what must start with a box's padded shape)."""
        return self.fields if self.pack is None else ()

    def offsets(self, ndim: int) -> tuple[Offset, ...]:
        """The neighbours this exchange moves halos with, in :func:`neighbour_offsets` order."""
        return neighbour_offsets(ndim) if self.corners else face_offsets(ndim)

    def packer(self) -> Callable[[Block, Box, Offset], np.ndarray]:
        """The packer to use (built once per exchange: it caches its slices)."""
        if "_packer" not in self.__dict__:
            self.__dict__["_packer"] = self.pack or grid_pack(self.fields, self.width)
        return self.__dict__["_packer"]

    def packer_all(self) -> Callable[[Block, Box, Sequence[Offset]], list[np.ndarray]]:
        """``pack_all``, or one built from :meth:`packer` (one call per offset)."""
        if self.pack_all is not None:
            return self.pack_all
        pack = self.packer()
        return lambda block, box, offsets: [pack(block, box, o) for o in offsets]

    def unpacker(self) -> Callable[[Block, Box, Offset, np.ndarray], None]:
        """The unpacker to use (built once per exchange)."""
        if "_unpacker" not in self.__dict__:
            self.__dict__["_unpacker"] = self.unpack or grid_unpack(self.fields, self.width)
        return self.__dict__["_unpacker"]


@dataclass(frozen=True)
class GraphExchange:
    """Payloads to arbitrary partitions before a phase (a message graph, not a stencil).

    Every round, each partition ``p`` packs one flat buffer for each of its destinations
    ``targets(box_p)`` (a fixed list for the whole run, repeats allowed); every executor
    delivers them, then each partition unpacks everything it received in one call, ordered by
    sender id and, for one sender, by the position of the destination in its list. Packing
    happens on every partition before any unpacking, so what a partition sends does not depend
    on what it receives in the same round.

    Parameters
    ----------
    targets
        ``targets(box)``: destination partition ids of ``box``'s partition (not itself).
    pack
        ``pack(block, box, j)``: the buffer for ``targets(box)[j]``, a numpy array of at most
        4 dimensions (a copy: the kernel goes on writing the block).
    unpack
        ``unpack(block, box, arrived)``: ``arrived`` is a list of ``(src, buffer)`` in the
        order above.
    nbytes
        ``nbytes(box)``: bytes of each buffer ``pack`` returns, per target (the expected size
        per round; what comm-aware placement strategies weigh before the run).
    """

    targets: Callable[[Box], Sequence[int]]
    pack: Callable[[Block, Box, int], np.ndarray]
    unpack: Callable[[Block, Box, list[tuple[int, np.ndarray]]], None]
    nbytes: Callable[[Box], Sequence[int]]


def graph_targets(graph: GraphExchange, boxes: Sequence[Box]) -> list[tuple[int, ...]]:
    """Every partition's destinations (checked: ids in range, never the partition itself)."""
    out = []
    n = len(boxes)
    for box in boxes:
        t = tuple(int(q) for q in graph.targets(box))
        if any(q < 0 or q >= n or q == box.part for q in t):
            raise ValueError(
                f"partition {box.part}: graph targets {t} must be other partitions in [0, {n})"
            )
        out.append(t)
    return out


REDUCE_OPS = ("min", "max", "sum")


@dataclass(frozen=True)
class Reduction:
    """A global reduction of the phase kernel's return value, published as ``values[name]``."""

    name: str
    op: str = "max"

    def __post_init__(self) -> None:
        if self.op not in REDUCE_OPS:
            raise InputError("reduction op", f"got {self.op!r}", f"one of {REDUCE_OPS}")

    def combine(self, values: Sequence[float]) -> float:
        """Combine per-partition values given in partition-id order."""
        if self.op == "min":
            return float(min(values))
        if self.op == "max":
            return float(max(values))
        total = 0.0
        for v in values:  # fixed order: every executor adds in partition-id order
            total += float(v)
        return total


@dataclass(frozen=True)
class Migration:
    """Items (particles) that leave a partition move to the neighbour that owns them.

    ``emigrate(block, box)`` removes the leavers and returns ``{offset: buffer}``;
    ``immigrate(block, box, buffers)`` takes the buffers that arrived, ordered by the
    offset they came from in :func:`neighbour_offsets` order.
    """

    emigrate: Callable[[Block, Box], dict[Offset, np.ndarray]]
    immigrate: Callable[[Block, Box, list[np.ndarray]], None]


@dataclass(frozen=True)
class Batch:
    """An optional fast path: a phase's tasks on many partitions in one compiled call.

    Executors that support it (the MPI task runtime) call ``run`` once for a whole set of
    ready partitions instead of the phase's ``boundary`` and ``kernel`` once per partition:
    no Python and no GIL between tasks, so tiny partitions stay cheap and threads scale. The
    others (serial, reference) keep calling ``boundary`` and ``kernel``: ``run`` must do, for
    each partition, exactly what they do, so that every executor gets the same bits. The
    runtime still calls ``check_block`` after each task — only for the partitions ``status``
    flags, if given. Phases with custom packers or a migration are run task by task whatever
    their ``batch``.

    Parameters
    ----------
    fields
        Block entries ``run`` reads or writes; each must keep its shape and dtype through the
        run. The runtime holds each in one flat array for all of a rank's partitions (every
        ``block[name]`` a view of its segment).
    run
        A numba function (``nogil=True``)
        ``run(arrays, bases, todo, params, iparams, values, stamps, halos)``:

        - ``arrays``: tuple of the flat arrays, in ``fields`` order;
        - ``bases``: int64 ``(len(fields), L)``, where local partition ``i``'s segment of each
          starts (its array is ``arrays[f][bases[f, i]:][:size].reshape(shape)``);
        - ``todo``: int64 ``(k,)``, the local partitions to run, in this order;
        - ``params``: float64, from ``params(ctx)``; ``iparams``: int64 ``(L, m)``, row ``i``
          from ``iparams(box)`` of local partition ``i``;
        - ``values``: float64 ``(L,)``, where the kernel's return value goes (reductions);
        - ``stamps``: int64 ``(k + 1,)`` and ``halos``, a tuple of the runtime's: ``run``
          calls :func:`grapeshot.model.task_halos.task_begins` ``(halos, stamps, t, i)`` right
          before task ``t`` (local partition ``i``) and
          :func:`~grapeshot.model.task_halos.batch_ends` ``(halos, stamps, k)`` after the
          last. They stamp the tasks' times and, where the runtime fuses halo exchanges into
          tasks, make the task's own halo copies (:mod:`grapeshot.model.task_halos`).
    params
        ``params(ctx)``: the step's float parameters (time step, ...), float64 1-D.
    iparams
        ``iparams(box)``: the partition's integer constants (sizes, walls), int64 1-D, the
        same length for every partition.
    status
        One of ``fields``, an integer entry whose first element ``run`` sets to ``-1`` for a
        healthy partition: ``check_block`` is then called only where it is not ``-1`` (the
        others would pass it), which saves a Python call per task.
    work
        One of ``fields``, an integer entry whose first element always holds what
        :meth:`Program.work` returns for the partition: where every phase is batched, the
        runtime reads all the counts of a rank at a step's end with one numpy index instead
        of a Python call per partition.
    shapes
        ``True``: the runtime appends to each partition's ``iparams`` row the shape of each of
        ``fields`` in its block (the field's dimensions, fields in order), for batches that
        must reshape fields the box alone does not size (a plain kernel's generated batch).
    """

    fields: tuple[str, ...]
    run: Callable
    params: Callable[[Context], np.ndarray]
    iparams: Callable[[Box], np.ndarray]
    status: str | None = None
    work: str | None = None
    shapes: bool = False

    def __post_init__(self) -> None:
        for role in ("status", "work"):
            name = getattr(self, role)
            if name is not None and name not in self.fields:
                raise ValueError(f"Batch.{role} {name!r} is not one of its fields")


@dataclass
class Context:
    """What a kernel sees of the run: the step, the time, and this step's reduced values."""

    step: int
    time: float
    values: dict[str, float] = field(default_factory=dict)


#: What a plain kernel without ``params`` gets as its parameters.
_NO_PARAMS = np.zeros(0)


@dataclass(frozen=True)
class Phase:
    """One kernel over every partition, with what precedes and follows it.

    Parameters
    ----------
    name
        Names the phase in records, timelines and errors.
    kernel
        ``kernel(block, box, ctx)``, or with ``fields`` a *plain kernel*
        ``kernel(*[block[f] for f in fields], box, params)`` (:meth:`call`). Its return value
        (a number, or ``None``) is what ``reduce`` combines.
    exchange, graph, reduce, migrate
        See :class:`Exchange`, :class:`GraphExchange`, :class:`Reduction`, :class:`Migration`.
    batch
        A hand-written :class:`Batch` (the same work on many partitions in one compiled call).
    fields
        Makes ``kernel`` a plain kernel: the block entries it takes, in order. When it is a
        numba function (``@njit``, best with ``nogil=True, cache=True``), the task runtime
        compiles a batch around it: many ready partitions in one compiled call, the same bits
        as calling it partition by partition (:mod:`grapeshot.runtime.plain_batch`). A plain
        Python function with that signature works too, one call per partition.
    params
        With ``fields``: ``params(ctx)``, the step's float parameters (time step, time, a
        reduced value from ``ctx.values``), converted to a float64 1-D array; ``None`` gives
        the kernel an empty array.
    """

    name: str
    kernel: Callable
    exchange: Exchange | None = None
    reduce: Reduction | None = None
    migrate: Migration | None = None
    batch: Batch | None = None
    #: Payloads to arbitrary partitions, delivered and unpacked before ``exchange``.
    graph: GraphExchange | None = None
    fields: tuple[str, ...] | None = None
    params: Callable[[Context], Sequence[float] | np.ndarray] | None = None

    def __post_init__(self) -> None:
        if self.fields is None:
            if self.params is not None:
                raise ValueError(f"phase {self.name!r}: params is for plain kernels; give fields")
            return
        fields = (self.fields,) if isinstance(self.fields, str) else tuple(self.fields)
        if not fields or not all(isinstance(f, str) and f for f in fields):
            raise ValueError(
                f"phase {self.name!r}: fields must name block entries, got {self.fields!r}"
            )
        if len(set(fields)) != len(fields):
            raise ValueError(f"phase {self.name!r}: fields {fields} name an entry twice")
        if self.batch is not None:
            raise ValueError(
                f"phase {self.name!r}: a plain kernel (fields) is batched by the runtime; "
                "give fields or batch, not both"
            )
        object.__setattr__(self, "fields", fields)

    def step_params(self, ctx: Context) -> np.ndarray:
        """A plain kernel's parameters for ``ctx``: float64, 1-D (empty without ``params``)."""
        if self.params is None:
            return _NO_PARAMS
        values = np.asarray(self.params(ctx), dtype=np.float64)
        if values.ndim > 1:
            raise ValueError(
                f"phase {self.name!r}: params(ctx) gave shape {values.shape}; expected 1-D"
            )
        values = np.ascontiguousarray(values.reshape(-1))
        # One array type for every step: a read-only array would compile the kernel again.
        return values if values.flags.writeable else values.copy()

    def call(self, block: Block, box: Box, ctx: Context) -> float | None:
        """Run the kernel on one partition, as executors do outside batches."""
        if self.fields is None:
            return self.kernel(block, box, ctx)
        arrays = [block[f] for f in self.fields]
        return self.kernel(*arrays, box.kernel_box, self.step_params(ctx))


class Program(ABC):
    """A simulation written once for every executor.

    Subclasses set :attr:`name`, :attr:`scene`, :attr:`domain_shape`, :attr:`parts_shape`,
    :attr:`ghost` and :attr:`phases`, and implement :meth:`init_block` and
    :meth:`output_fields`. :meth:`work` (default: :attr:`work_field`'s first element, else the
    partition's cells) gives the count a partition's cost follows; :meth:`advance` ends a
    step (default: ``ctx.values["dt"]``).
    """

    name: str = "program"
    scene: str = ""
    domain_shape: tuple[int, ...] = ()
    parts_shape: tuple[int, ...] = ()
    ghost: int = 1
    phases: tuple[Phase, ...] = ()
    #: Names in :meth:`output_fields` that are particle attributes (one row per particle,
    #: gathered by concatenation and sorted by ``"id"``), not grid fields.
    particle_fields: tuple[str, ...] = ()
    #: A block entry (an integer array) whose first element a kernel keeps equal to the
    #: partition's work count: the default :meth:`work` reads it, and the task runtime reads
    #: every partition's count of a rank in one index instead of a Python call each.
    work_field: str | None = None
    #: Where the program came from when it is not a built-in app (``heat.py:make_heat``, set
    #: by :mod:`grapeshot.apps.user`): the first words of every error a task of it raises.
    origin: str | None = None
    #: Per axis, whether the domain wraps around (Gray-Scott, turbulence boxes, molecular
    #: dynamics): ``(True, True)`` for a doubly periodic 2-D domain. Across a periodic axis the
    #: last partition's neighbour is the first, exchanged like any other neighbour by every
    #: executor; a partition spanning the whole axis is its own neighbour. The axis has no
    #: walls: :meth:`Box.at_wall` is ``False`` there, and a kernel fills no ghost cell of it.
    periodic: tuple[bool, ...] = ()

    def boxes(self) -> list[Box]:
        """Every partition's box, in partition-id order."""
        return partition_boxes(self.domain_shape, self.parts_shape, self.ghost, self.periodic)

    @property
    def n_parts(self) -> int:
        """Number of partitions."""
        return math.prod(self.parts_shape)

    @abstractmethod
    def init_block(self, box: Box) -> Block:
        """The initial state of the partition ``box``."""

    def work(self, block: Block, box: Box) -> int:
        """The count that drives this partition's cost (particles, wet cells, band cells).

        Default: ``block[work_field][0]`` with :attr:`work_field`, else the partition's
        interior cells (a stencil's cost).
        """
        if self.work_field is not None:
            return int(block[self.work_field][0])
        return math.prod(box.shape)

    @property
    def counts_work(self) -> bool:
        """Whether the program counts its partitions' work (a :attr:`work_field` or its own
        :meth:`work`); otherwise a partition's count is its cells, the same for all alike."""
        return self.work_field is not None or type(self).work is not Program.work

    @abstractmethod
    def output_fields(self, block: Block, box: Box) -> dict[str, np.ndarray]:
        """Interior fields of the partition, each shaped like ``box.shape`` (cells)."""

    def advance(self, ctx: Context) -> float:
        """Simulated time a step advanced, from its reduced values (default ``"dt"``)."""
        return ctx.values.get("dt", 0.0)

    def check_block(self, block: Block, box: Box, ctx: Context, phase: str) -> None:  # noqa: B027
        """Raise :class:`SimulationError` if the block went unstable (default: no check)."""


def needs_corners(program: Program) -> bool:
    """Whether halos of ``program`` travel between diagonal neighbours: ``False`` only when
    it has exchanges, every one ``Exchange(corners=False)``, and no migration (particles
    move diagonally)."""
    exchanges = [ph.exchange for ph in program.phases if ph.exchange is not None]
    migrates = any(ph.migrate is not None for ph in program.phases)
    return migrates or not exchanges or any(ex.corners for ex in exchanges)


def failure_text(program: Program, part: int, step: int, phase: str, exc: BaseException) -> str:
    """One line saying which task failed and how: ``[origin: ]partition P, step S, phase 'X'
    failed: Type: message`` (every executor words a failing task this way)."""
    where = f"{program.origin}: " if program.origin else ""
    return f"{where}partition {part}, step {step}, phase {phase!r} failed: {exception_line(exc)}"


class TaskFailed(GrapeshotError):
    """A task's kernel (or unpacker, boundary, ...) raised; the message is :func:`failure_text`."""


class SetupFailed(GrapeshotError):
    """Building a run's state failed before step 0 (a partition's ``init_block``); the message
    names the partition and the file and line that raised."""


def make_block(program: Program, box: Box) -> Block:
    """``program.init_block(box)``, checked: every executor builds its blocks through this.

    Raises
    ------
    SetupFailed
        ``init_block`` raised: one line naming the partition, the error and the file and line
        of the user's code that raised it.
    InputError
        The block is not a dict, or lacks a field a phase names (its kernel's ``fields``, or a
        grid exchange's): the phase and the field, and the block's own fields.
    """
    where = f"{program.origin}: " if program.origin else ""
    try:
        block = program.init_block(box)
    except GrapeshotError:
        raise
    except Exception as exc:  # the user's code: one line, not a traceback per rank
        at = raised_at(exc)
        raise SetupFailed(
            f"{where}partition {box.part}: init_block raised {exception_line(exc)}"
            + (f" ({at})" if at else "")
        ) from exc
    if not isinstance(block, dict):
        raise InputError(
            f"{where}partition {box.part}",
            f"init_block returned {type(block).__name__}",
            "a dict of numpy arrays (docs/program-api.md)",
        )
    for phase in program.phases:
        named = list(phase.fields or ())
        if phase.exchange is not None:
            named += phase.exchange.grid_fields
        for name in named:
            if name not in block:
                raise InputError(
                    f"{where}phase {phase.name!r}",
                    f"names the field {name!r}, which init_block's block has not",
                    f"one of {', '.join(map(repr, sorted(block)))}",
                )
    return block


class SimulationError(InputError):
    """A simulation that went unstable; names the step, the partition and the phase."""

    def __init__(self, step: int, part: int, phase: str, problem: str) -> None:
        self.step, self.part, self.phase = step, part, phase
        super().__init__(f"step {step}, partition {part}, phase {phase!r}", problem, None)

    def __reduce__(self):
        return (SimulationError, (self.step, self.part, self.phase, self.problem))
