"""A plain kernel's batch: the compiled loop the runtime writes around a user's numba kernel.

A phase with :attr:`~grapeshot.model.program.Phase.fields` and a numba kernel
``kernel(*fields, box, params)`` needs no hand-written
:class:`~grapeshot.model.program.Batch`. :func:`plain_batch` generates one: a numba function
that, for each ready partition, calls the halo hook :func:`~grapeshot.model.task_halos.task_begins`,
cuts the partition's fields out of the runtime's flat arrays, builds its
:class:`~grapeshot.model.program.KernelBox` from integers and calls the kernel, storing what it
returns for the phase's reduction. The kernel is the same compiled function, on the same
arrays and the same integers, as :meth:`Phase.call <grapeshot.model.program.Phase.call>`
calls from Python, so the bits are the same; what goes away is the Python call per partition
(a few microseconds) and the GIL between tasks.

The loop's source depends on the number of axes and of fields and on each field's
dimensions, so it is written out as a small module, once, into a cache folder
(:func:`~grapeshot.compiled_cache.cache_dir`), and compiled with numba's on-disk cache: a
later run loads it in milliseconds instead of compiling for a second or two. numba compiles
the kernel *into* the loop, with the values it captured (closure cells, defaults, the
globals it reads) frozen as constants, so the module's name carries a hash of everything that
makes the compiled code (:func:`kernel_identity`): the kernel's bytecode and its source files
(its module and those of the numba functions it calls, transitively), the values it captured,
and the sources of grapeshot's own modules the loop calls
(:func:`~grapeshot.compiled_cache.sources_digest`). Two kernels made by one factory with other
constants get loops of their own, and an upgraded grapeshot never loads a loop compiled
against its old code (:func:`grapeshot.compiled_cache.refresh` deletes those). A kernel that
captured a value the hash cannot read (an object of a class of its own) gets a loop of its
own, compiled in memory at every run; so does a kernel not defined in a file (a notebook
cell, ``exec``), or any kernel when no cache folder can be written.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.dispatcher import Dispatcher
from numba.extending import intrinsic, overload
from numba.np.arrayobj import populate_array

from grapeshot.compiled_cache import cache_dir, sources_digest
from grapeshot.model.errors import InputError
from grapeshot.model.program import Batch, Box, Context, Phase
from grapeshot.runtime.halo_plan import Arena

#: Bump when the generated source changes meaning without changing its text.
_FORMAT = 2
#: grapeshot's modules the generated loop imports (their code is compiled into it).
_CALLS = ("grapeshot.model.program", "grapeshot.model.task_halos", __name__)


def as_value(value) -> float:
    """A kernel's return value as the float the runtime keeps (``None`` counts as 0)."""
    return 0.0 if value is None else float(value)


@overload(as_value)
def _as_value(value):
    if isinstance(value, types.NoneType | types.Omitted):
        return lambda value: 0.0
    if isinstance(value, types.Number | types.Boolean):
        return lambda value: float(value)
    return None  # anything else: numba's typing error names as_value and the type


@intrinsic
def borrowed(typingctx, flat, start, shape):
    """``flat[start : start + prod(shape)].reshape(shape)`` (``flat`` a 1-d C array, ``shape``
    a tuple of ints), C-contiguous, without an owner: numba's memory manager counts no
    references to it.

    A slice of ``flat`` would share ``flat``'s owner, and every view made of it in the loop
    or in the kernel (a row, a face) would add and drop a reference to it with atomic
    operations: about 175 ns a task on a 32 × 16-cell block, a tenth of its kernel (measured
    in one process, ``docs/runtime.md``). The loop holds ``flat`` for the whole call, so the
    view cannot outlive its memory: a kernel returns a number, not the view.
    """
    if not isinstance(flat, types.Array) or flat.ndim != 1 or flat.layout != "C":
        return None
    if not isinstance(shape, types.UniTuple) or not isinstance(shape.dtype, types.Integer):
        return None
    ndim = shape.count
    view = types.Array(flat.dtype, ndim, "C")

    def codegen(context, builder, signature, args):
        flat_value, start_value, shape_value = args
        source = context.make_array(signature.args[0])(context, builder, flat_value)
        out = context.make_array(view)(context, builder)
        intp = context.get_value_type(types.intp)
        itemsize = context.get_abi_sizeof(context.get_data_type(flat.dtype))
        shapes = [
            context.cast(builder, v, shape.dtype, types.intp)
            for v in cgutils.unpack_tuple(builder, shape_value, ndim)
        ]
        strides = []
        stride = ir.Constant(intp, itemsize)
        for extent in reversed(shapes):  # C order: the last axis steps by one item
            strides.insert(0, stride)
            stride = builder.mul(stride, extent)
        populate_array(
            out,
            data=builder.gep(source.data, [start_value]),
            shape=shapes,
            strides=strides,
            itemsize=ir.Constant(intp, itemsize),
            meminfo=None,
        )
        return out._getvalue()

    return view(flat, types.intp, shape), codegen


def is_numba_kernel(kernel) -> bool:
    """Whether ``kernel`` is a numba function the runtime can call from compiled code."""
    return isinstance(kernel, Dispatcher)


def _box_row(box: Box) -> np.ndarray:
    """``part, lo..., hi..., ghost, domain...``: the integers a :class:`KernelBox` is built of."""
    return np.array([box.part, *box.lo, *box.hi, box.ghost, *box.domain_shape], dtype=np.int64)


def _source(ndim: int, field_ndims: tuple[int, ...], cache: bool) -> str:
    """The generated module: a batch over a kernel of ``len(field_ndims)`` fields."""

    def axes(start: int) -> str:
        return ", ".join(f"r[{start + a}]" for a in range(ndim)) + ("," if ndim == 1 else "")

    lo, hi, ghost, domain = 1, 1 + ndim, 1 + 2 * ndim, 2 + 2 * ndim
    shape = ", ".join(f"r[{hi + a}] - r[{lo + a}]" for a in range(ndim)) + (
        "," if ndim == 1 else ""
    )
    lines = [
        f"# Generated by grapeshot.runtime.plain_batch (format {_FORMAT}); do not edit.",
        "from numba import njit",
        "",
        f"from {_CALLS[0]} import KernelBox",
        f"from {_CALLS[1]} import batch_ends, task_begins",
        f"from {_CALLS[2]} import as_value, borrowed",
        "",
        "kernel = None  # the user's kernel, bound before the first call",
        "",
        "",
        f"@njit(cache={cache}, nogil=True)",
        "def run(arrays, bases, todo, params, iparams, values, stamps, halos):",
        "    for t in range(todo.size):",
        "        i = todo[t]",
        "        task_begins(halos, stamps, t, i)",
        "        r = iparams[i]",
        f"        box = KernelBox(r[0], ({axes(lo)}), ({axes(hi)}), ({shape}), r[{ghost}], "
        f"({axes(domain)}))",
    ]
    at = domain + ndim
    names = []
    for f, nd in enumerate(field_ndims):
        dims = [f"r[{at + a}]" for a in range(nd)]
        at += nd
        lines.append(f"        f{f} = borrowed(arrays[{f}], bases[{f}, i], ({', '.join(dims)},))")
        names.append(f"f{f}")
    lines += [
        f"        values[i] = as_value(kernel({', '.join(names)}, box, params))",
        "    batch_ends(halos, stamps, todo.size)",
        "",
    ]
    return "\n".join(lines)


class _Unreadable(Exception):
    """A captured value :func:`kernel_identity` cannot turn into bytes."""


def _value_bytes(value: object, callees: list[Dispatcher]) -> bytes:
    """Bytes that differ wherever numba would compile ``value`` as another constant; a
    numba function met on the way is added to ``callees`` (its own identity counts)."""
    if value is None or isinstance(value, bool | int | float | complex | str | bytes):
        return f"{type(value).__name__}:{value!r}".encode()
    if isinstance(value, np.ndarray | np.generic):
        array = np.ascontiguousarray(value)
        return f"array:{array.dtype.str}:{array.shape}:".encode() + array.tobytes()
    if isinstance(value, tuple | list):
        inner = b",".join(_value_bytes(v, callees) for v in value)
        return f"{type(value).__name__}(".encode() + inner + b")"
    if isinstance(value, Dispatcher):
        callees.append(value)
        return f"numba:{value.py_func.__module__}.{value.py_func.__qualname__}".encode()
    if isinstance(value, ModuleType):
        return f"module:{value.__name__}".encode()
    raise _Unreadable(type(value).__qualname__)


def _code_bytes(code) -> bytes:
    """A function's bytecode, names and constants, nested functions' included."""
    parts = [code.co_code, repr(code.co_names).encode()]
    for const in code.co_consts:
        if inspect.iscode(const):
            parts.append(_code_bytes(const))
        elif isinstance(const, frozenset):  # ``x in {...}``: its order varies by process
            parts.append(repr(sorted(map(repr, const))).encode())
        else:
            parts.append(repr(const).encode())
    return b"\0".join(parts)


def _global_names(code) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:  # nested functions' globals count as well
        if inspect.iscode(const):
            names |= _global_names(const)
    return names


def kernel_identity(kernel: Dispatcher) -> tuple[list[Path] | None, bytes | None]:
    """What numba compiles into a loop that calls ``kernel``: ``(files, key)``.

    ``files`` are the source files of ``kernel`` and of the numba functions it calls,
    transitively (``None`` if one is not a file: a notebook cell, ``exec``). ``key`` holds,
    for each of those functions, its qualified name, its bytecode and the values it captured
    (closure cells and defaults) or reads as globals (numbers, strings, arrays, tuples of
    them: numba freezes them as constants); ``None`` if one captured a value it cannot read
    (an object of another class: such a kernel cannot be told from another by its bytes).
    Globals of other kinds (classes, functions) are defined in the files, whose bytes count.
    """
    files: dict[Path, None] = {}
    key: list[bytes] = []
    seen: set[int] = set()
    todo = [kernel]
    in_files = True
    readable = True
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        py = fn.py_func
        try:
            path = inspect.getsourcefile(py)
        except TypeError:
            path = None
        if path is None or not Path(path).is_file():
            in_files = False
        else:
            files[Path(path).resolve()] = None
        key += [f"{py.__module__}.{py.__qualname__}".encode(), _code_bytes(py.__code__)]
        try:
            captured = [c.cell_contents for c in py.__closure__ or ()]
        except ValueError:  # a cell not filled yet (a function that calls itself)
            captured, readable = [], False
        captured += list(py.__defaults__ or ())
        try:
            key.append(_value_bytes(tuple(captured), todo))
        except _Unreadable:
            readable = False
        scope = py.__globals__
        for name in sorted(_global_names(py.__code__)):
            if name not in scope:
                continue
            try:
                key.append(name.encode() + b"=" + _value_bytes(scope[name], todo))
            except _Unreadable as kind:  # a class or function: its file's bytes count
                key.append(f"{name}:{kind}".encode())
    return (sorted(files) if in_files else None), (b"\0".join(key) if readable else None)


def _cacheable(kernel: Dispatcher) -> bool:
    """Whether a cached batch could find ``kernel``'s module again in a later run: numba
    rebuilds a cached function's environment by importing its callees' modules by name."""
    module = sys.modules.get(kernel.py_func.__module__)
    return module is not None and getattr(module, "__file__", None) is not None


def _module_from_file(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache imports the module by name to rebuild it
    spec.loader.exec_module(module)
    return module


def _publish(path: Path, source: str) -> None:
    """Write ``source`` to ``path`` unless it is there already, never rewriting it: several
    ranks may write it at once, and the first whole file wins (a hard link, atomic).

    numba (0.68, pinned in ``pyproject.toml``) keys a cached function on its file's
    contents (a SHA-256 of the bytes, memoised per mtime and size) and on its qualified
    name and first line: a rewrite with the same bytes would still be served from the
    cache, but a file being written while another rank compiles from it would not be
    whole. The file's name already carries every input of the loop (:func:`_loop`), so
    its contents never need to change."""
    if path.is_file():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(source)
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)  # the first writer wins; the file never changes afterwards
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


#: The loops made in this process, by kernel object and layout, with the kernel kept alive (so
#: its ``id`` is not reused): each rank plan asks again, at every rebalance of a run.
_MADE: dict[tuple[int, int, tuple[int, ...]], tuple[Dispatcher, Dispatcher]] = {}


def _loop(kernel: Dispatcher, ndim: int, field_ndims: tuple[int, ...]):
    """The compiled loop for ``kernel`` (a numba dispatcher, not compiled yet). numba freezes
    what a kernel captured at its first compilation, so within a process one kernel object
    keeps its loop."""
    made = _MADE.get((id(kernel), ndim, field_ndims))
    if made is not None:
        return made[1]
    files, key = kernel_identity(kernel)
    cache = files is not None and key is not None and _cacheable(kernel)
    source = _source(ndim, field_ndims, cache)
    digest = hashlib.sha256(source.encode())
    digest.update(f"{numba.__version__} {sys.version}".encode())
    digest.update(sources_digest(_CALLS).encode())
    digest.update(f"{kernel.py_func.__module__}.{kernel.py_func.__qualname__}".encode())
    if key is None:  # told apart by the object alone (the module keeps it alive)
        digest.update(f"object {id(kernel)}".encode())
    else:
        digest.update(key)
    for path in files or ():
        digest.update(str(path).encode())
        digest.update(path.read_bytes())
    module, made = generated_module(f"_grapeshot_batch_{digest.hexdigest()[:24]}", source, cache)
    if made:
        module.kernel = kernel
    _MADE[(id(kernel), ndim, field_ndims)] = (kernel, module.run)
    return module.run


def generated_module(name: str, source: str, cache: bool) -> tuple[ModuleType, bool]:
    """The module ``name`` of generated ``source`` and whether it was made now: from the cache
    folder where ``cache`` (numba's on-disk cache then serves its functions), else in memory
    with no cache (also where no cache folder can be written). ``name`` must carry every
    input of ``source``'s compiled code."""
    module = sys.modules.get(name)
    if module is not None:
        return module, False
    if cache:
        path = cache_dir() / f"{name}.py"
        with contextlib.suppress(OSError):  # no writable cache folder: in memory
            _publish(path, source)
            return _module_from_file(path, name), True
    module = ModuleType(name)
    exec(compile(source.replace("cache=True", "cache=False"), name, "exec"), vars(module))
    sys.modules[name] = module
    return module, True


def iparams_table(
    batch: Batch,
    boxes: list[Box],
    parts: list[int],
    arena: Arena,
    known: dict[int, np.ndarray] | None = None,
) -> np.ndarray:
    """int64 ``(len(parts), m)``: row ``i`` is ``batch.iparams(boxes[parts[i]])``, followed
    with :attr:`Batch.shapes` by the shape of each of the batch's fields in that partition.

    ``known``, ``{partition: row}``, keeps the rows made (a partition's box and its fields'
    shapes never change in a run): a re-plan after a rebalance makes only the arrivals' rows
    (a row is a few numpy calls, ~4 µs: 0.5 ms a phase for 128 partitions, every re-plan).
    """
    known = {} if known is None else known
    views = [arena.views[f] for f in batch.fields] if batch.shapes else []
    for p in parts:
        if p not in known:
            row = np.asarray(batch.iparams(boxes[p]), dtype=np.int64)
            if views:
                row = np.concatenate(
                    [row, *(np.asarray(v[p].shape, dtype=np.int64) for v in views)]
                )
            known[p] = row
    return np.array([known[p] for p in parts], dtype=np.int64).reshape(len(parts), -1)


def plain_batch(phase: Phase, ndim: int, field_ndims: tuple[int, ...], work: str | None) -> Batch:
    """The :class:`Batch` the runtime runs for a plain-kernel phase.

    Parameters
    ----------
    phase
        A phase with ``fields`` and a numba ``kernel`` (:func:`is_numba_kernel`).
    ndim
        Axes of the domain (2 or 3).
    field_ndims
        Dimensions of each of ``phase.fields`` in a block (the same for every partition).
    work
        The program's :attr:`~grapeshot.model.program.Program.work_field` when the program
        keeps the default ``work`` and the kernel takes that field, else ``None``.
    """
    for name, nd in zip(phase.fields, field_ndims, strict=True):
        if nd < 1:
            raise InputError(
                f"phase {phase.name!r}: field {name!r}",
                "is a 0-d array",
                "a numpy array of at least one dimension",
            )
    run = _loop(phase.kernel, ndim, tuple(field_ndims))

    def params(ctx: Context) -> np.ndarray:
        return phase.step_params(ctx)

    return Batch(phase.fields, run, params, _box_row, work=work, shapes=True)
