"""The kernel's ready queues: first-in-first-out ring buffers of tasks, stacks of free cores.

With dynamic dispatch (Birdshot §4) a node's cores share one queue; pinned, each core has its
own (:class:`grapeshot.sim.program.Layout`). A queue that an event changed is marked touched,
and the kernel then lets its idle cores take its head (:func:`grapeshot.sim.events.dispatch`).
The state is a :class:`grapeshot.sim.kernel_state.Queues`.
"""

from __future__ import annotations

from numba import njit

from grapeshot.sim.kernel_state import Queues


@njit(cache=True, inline="always")
def touch(qs: Queues, q: int) -> None:
    """Mark queue ``q`` for the next dispatch."""
    n = qs.n_touched[0]
    qs.touched[n] = q
    qs.n_touched[0] = n + 1


@njit(cache=True, inline="always")
def append(qs: Queues, task: int, q: int) -> None:
    """Put ``task`` at the tail of queue ``q`` (its partition's), unmarked."""
    # A wrap by comparison, not ``%``: a division per task, and the slot is the same.
    slot = qs.q_head[q] + qs.q_len[q]
    cap = qs.q_ptr[q + 1] - qs.q_ptr[q]
    if slot >= cap:
        slot -= cap
    qs.q_buf[qs.q_ptr[q] + slot] = task
    qs.q_len[q] += 1


@njit(cache=True, inline="always")
def enqueue(qs: Queues, task: int, q: int) -> None:
    """Put ``task`` at the tail of queue ``q`` (its partition's) and mark the queue."""
    append(qs, task, q)
    touch(qs, q)


@njit(cache=True, inline="always")
def free_core(qs: Queues, q: int, core: int) -> None:
    """``core`` finished a task of a partition of queue ``q``: it is free again for ``q``."""
    qs.fc_buf[qs.fc_ptr[q] + qs.fc_len[q]] = core
    qs.fc_len[q] += 1
    touch(qs, q)


@njit(cache=True, inline="always")
def take(qs: Queues, q: int):
    """Pop queue ``q``'s head task and one of its free cores; return ``(task, core)``.

    The caller checks that the queue has a task and a free core.
    """
    task = qs.q_buf[qs.q_ptr[q] + qs.q_head[q]]
    head = qs.q_head[q] + 1
    qs.q_head[q] = 0 if head == qs.q_ptr[q + 1] - qs.q_ptr[q] else head
    qs.q_len[q] -= 1
    qs.fc_len[q] -= 1
    return task, qs.fc_buf[qs.fc_ptr[q] + qs.fc_len[q]]
