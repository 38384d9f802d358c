"""Small programs that exercise the program API in tests."""

from __future__ import annotations

import numpy as np
from numba import njit

from grapeshot.model.clock import now_ns
from grapeshot.model.program import (
    Batch,
    Block,
    Box,
    Context,
    Exchange,
    Migration,
    Phase,
    Program,
    Reduction,
    neighbour_offsets,
)
from grapeshot.model.task_halos import batch_ends, task_begins


@njit(cache=True, nogil=True)
def _diffuse(u: np.ndarray, out: np.ndarray, k: float) -> None:
    nx, ny = u.shape
    for i in range(1, nx - 1):
        for j in range(1, ny - 1):
            out[i, j] = u[i, j] + k * (
                u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]
            )


def _walls(block: Block, box: Box) -> None:
    u = block["u"]
    g = box.ghost
    if box.at_wall(0, -1):
        u[:g, :] = u[g : g + 1, :]
    if box.at_wall(0, 1):
        u[-g:, :] = u[-g - 1 : -g, :]
    if box.at_wall(1, -1):
        u[:, :g] = u[:, g : g + 1]
    if box.at_wall(1, 1):
        u[:, -g:] = u[:, -g - 1 : -g]


class Heat(Program):
    """2-D heat equation with insulated walls; a hot square in one corner."""

    name = "heat"

    def __init__(self, domain=(24, 18), parts=(3, 2)):
        self.domain_shape = domain
        self.parts_shape = parts
        self.ghost = 1
        self.phases = (
            Phase("speed", self._speed, reduce=Reduction("umax", "max")),
            Phase("diffuse", self._step, exchange=Exchange(("u",), 1, boundary=_walls)),
            Phase("mass", self._mass, reduce=Reduction("mass", "sum")),
        )

    def init_block(self, box: Box) -> Block:
        u = np.zeros(box.padded_shape)
        x = np.arange(box.lo[0], box.hi[0])[:, None]
        y = np.arange(box.lo[1], box.hi[1])[None, :]
        u[box.interior()] = ((x < 6) & (y < 6)) * 1.0
        return {"u": u, "tmp": u.copy()}

    def _speed(self, block, box, ctx: Context):
        return float(block["u"][box.interior()].max())

    def _step(self, block, box, ctx: Context):
        _diffuse(block["u"], block["tmp"], 0.2)
        block["u"][box.interior()] = block["tmp"][box.interior()]

    def _mass(self, block, box, ctx):
        return float(block["u"][box.interior()].sum())

    def work(self, block, box):
        return int((block["u"][box.interior()] > 1e-3).sum())

    def output_fields(self, block, box):
        return {"u": block["u"][box.interior()].copy()}

    def advance(self, ctx):
        return 1.0


class Walkers(Program):
    """Particles moving up to one cell a step, bouncing off the walls; they migrate."""

    name = "walkers"
    particle_fields = ("id", "x")

    def __init__(self, domain=(12, 8), parts=(3, 2), n=40, seed=0):
        self.domain_shape = domain
        self.parts_shape = parts
        rng = np.random.default_rng(seed)
        self.pos = rng.uniform(0, 1, size=(n, 2)) * np.asarray(domain)
        self.vel = rng.uniform(-1, 1, size=(n, 2))
        self.phases = (Phase("move", self._move, migrate=Migration(self._leave, self._arrive)),)

    def init_block(self, box):
        lo, hi = np.asarray(box.lo), np.asarray(box.hi)
        keep = np.all((self.pos >= lo) & (self.pos < hi), axis=1)
        ids = np.flatnonzero(keep).astype(np.float64)
        return {"p": np.column_stack([ids, self.pos[keep], self.vel[keep]])}

    def _move(self, block, box, ctx):
        p = block["p"]
        size = np.asarray(self.domain_shape, dtype=np.float64)
        pos = p[:, 1:3] + p[:, 3:5]
        bounce = (pos < 0) | (pos >= size)
        p[:, 3:5] = np.where(bounce, -p[:, 3:5], p[:, 3:5])
        p[:, 1:3] = np.where(bounce, p[:, 1:3], pos)

    def _leave(self, block, box):
        p = block["p"]
        lo, hi = np.asarray(box.lo), np.asarray(box.hi)
        offset = np.where(p[:, 1:3] < lo, -1, np.where(p[:, 1:3] >= hi, 1, 0))
        block["p"] = p[~offset.any(axis=1)]
        out = {}
        for o in neighbour_offsets(2):
            sel = np.all(offset == np.asarray(o), axis=1)
            if sel.any():
                out[o] = p[sel]
        return out

    def _arrive(self, block, box, buffers):
        if buffers:
            block["p"] = np.concatenate([block["p"], *buffers])

    def work(self, block, box):
        return len(block["p"])

    def output_fields(self, block, box):
        return {"id": block["p"][:, 0].copy(), "x": block["p"][:, 1:3].copy()}


class Failing(Heat):
    """Heat whose kernel raises on partition 3 at step 2."""

    name = "failing"

    def _step(self, block, box, ctx):
        if box.part == 3 and ctx.step == 2:
            raise FloatingPointError("the kernel blew up")
        super()._step(block, box, ctx)


class Dying(Heat):
    """Heat whose rank owning partition 3 dies (exits without a word) at step 2."""

    name = "dying"

    def _step(self, block, box, ctx):
        if box.part == 3 and ctx.step == 2:
            import os

            os._exit(7)
        super()._step(block, box, ctx)


@njit(cache=True, nogil=True)
def _diffuse_batch(arrays, bases, todo, params, iparams, values, stamps, halos):
    """Heat's diffuse phase on many partitions: the same walls and stencil, in one call."""
    u_all, tmp_all = arrays
    for t in range(todo.size):
        i = todo[t]
        task_begins(halos, stamps, t, i)
        px, py = iparams[i, 0], iparams[i, 1]
        u = u_all[bases[0, i] : bases[0, i] + px * py].reshape((px, py))
        tmp = tmp_all[bases[1, i] : bases[1, i] + px * py].reshape((px, py))
        if iparams[i, 2]:
            u[0, :] = u[1, :]
        if iparams[i, 3]:
            u[px - 1, :] = u[px - 2, :]
        if iparams[i, 4]:
            u[:, 0] = u[:, 1]
        if iparams[i, 5]:
            u[:, py - 1] = u[:, py - 2]
        _diffuse(u, tmp, params[0])
        u[1 : px - 1, 1 : py - 1] = tmp[1 : px - 1, 1 : py - 1]
        values[i] = 0.0
    batch_ends(halos, stamps, todo.size)


class BatchedHeat(Heat):
    """Heat whose diffuse phase also has a :class:`Batch` (the runtime uses it, serial not)."""

    name = "heat-batched"

    def __init__(self, domain=(24, 18), parts=(3, 2), fail_at: int | None = None):
        super().__init__(domain, parts)
        self.fail_at = fail_at
        speed, diffuse, mass = self.phases
        batch = Batch(("u", "tmp"), _diffuse_batch, self._params, self._iparams)
        diffuse = Phase(diffuse.name, diffuse.kernel, exchange=diffuse.exchange, batch=batch)
        self.phases = (speed, diffuse, mass)

    def _params(self, ctx):
        if self.fail_at is not None and ctx.step == self.fail_at:
            raise FloatingPointError("the batch's parameters blew up")
        return np.array([0.2])

    def _iparams(self, box):
        walls = [box.at_wall(0, -1), box.at_wall(0, 1), box.at_wall(1, -1), box.at_wall(1, 1)]
        return np.array([*box.padded_shape, *walls], dtype=np.int64)


@njit(cache=True, nogil=True)
def _self_stamping_batch(arrays, bases, todo, params, iparams, values, stamps, halos):
    """Stamps its tasks itself instead of calling task_begins / batch_ends (and so copies no
    halos): the runtime must refuse it rather than compute with stale ghost cells."""
    for t in range(todo.size):
        stamps[t] = now_ns()
        values[todo[t]] = 0.0
    stamps[todo.size] = now_ns()


class SelfStampingBatch(BatchedHeat):
    """BatchedHeat whose batch skips the halo protocol (:func:`_self_stamping_batch`)."""

    name = "self-stamping-batch"

    def __init__(self, domain=(24, 18), parts=(3, 2)):
        super().__init__(domain, parts)
        speed, diffuse, mass = self.phases
        batch = Batch(("u", "tmp"), _self_stamping_batch, self._params, self._iparams)
        self.phases = (
            speed,
            Phase(diffuse.name, diffuse.kernel, diffuse.exchange, batch=batch),
            mass,
        )


@njit(cache=True, nogil=True)
def _halve_batch(arrays, bases, todo, params, iparams, values, stamps, halos):
    """Halve every partition's ``u`` in place (what RebindThenBatch's ``halve`` kernel does)."""
    (u_all,) = arrays
    for t in range(todo.size):
        i = todo[t]
        task_begins(halos, stamps, t, i)
        n = iparams[i, 0]
        u = u_all[bases[0, i] : bases[0, i] + n]
        for j in range(n):
            u[j] = 0.5 * u[j]
        values[i] = 0.0
    batch_ends(halos, stamps, todo.size)


class RebindThenBatch(Heat):
    """Heat, then a per-task phase that *replaces* ``u`` by a doubled copy, then a batched
    phase without an exchange that halves ``u`` in place: the batch must work on the new
    array, or the doubling survives and the fields differ from the serial run."""

    name = "rebind-then-batch"

    def __init__(self, domain=(24, 18), parts=(3, 2)):
        super().__init__(domain, parts)
        halve = Batch(("u",), _halve_batch, self._params, self._iparams)
        self.phases = (
            *self.phases,
            Phase("double", self._double),
            Phase("halve", self._halve, batch=halve),
        )

    def _double(self, block, box, ctx):
        block["u"] = block["u"] * 2.0

    def _halve(self, block, box, ctx):
        block["u"] *= 0.5

    def _params(self, ctx):
        return np.zeros(1)

    def _iparams(self, box):
        return np.array([int(np.prod(box.padded_shape))], dtype=np.int64)
