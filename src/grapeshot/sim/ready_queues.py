"""The kernel's ready queues: first-in-first-out ring buffers of tasks, stacks of free cores.

With dynamic dispatch (Birdshot §4) a node's cores share one queue; pinned, each core has its
own (:class:`grapeshot.sim.program.Layout`). A queue that an event changed is marked touched,
and the kernel then lets its idle cores take its head (:func:`grapeshot.sim.events.dispatch`).
The state is a :class:`grapeshot.sim.kernel_state.Queues`.
"""

from __future__ import annotations

from numba import njit

from grapeshot.sim.kernel_state import Plan, Queues


@njit(cache=True, inline="always")
def touch(qs: Queues, q: int) -> None:
    """Mark queue ``q`` for the next dispatch."""
    n = qs.n_touched[0]
    qs.touched[n] = q
    qs.n_touched[0] = n + 1


@njit(cache=True, inline="always")
def append(plan: Plan, qs: Queues, task: int, p: int) -> None:
    """Put ``task`` (of partition ``p``) at the tail of ``p``'s queue, unmarked."""
    q = plan.queue_of[p]
    cap = qs.q_ptr[q + 1] - qs.q_ptr[q]
    qs.q_buf[qs.q_ptr[q] + (qs.q_head[q] + qs.q_len[q]) % cap] = task
    qs.q_len[q] += 1


@njit(cache=True, inline="always")
def enqueue(plan: Plan, qs: Queues, task: int, p: int) -> None:
    """Put ``task`` (of partition ``p``) at the tail of ``p``'s queue and mark the queue."""
    append(plan, qs, task, p)
    touch(qs, plan.queue_of[p])


@njit(cache=True, inline="always")
def free_core(plan: Plan, qs: Queues, p: int, core: int) -> None:
    """``core`` finished a task of partition ``p``: it is free again for ``p``'s queue."""
    q = plan.queue_of[p]
    qs.fc_buf[qs.fc_ptr[q] + qs.fc_len[q]] = core
    qs.fc_len[q] += 1
    touch(qs, q)


@njit(cache=True, inline="always")
def take(qs: Queues, q: int):
    """Pop queue ``q``'s head task and one of its free cores; return ``(task, core)``.

    The caller checks that the queue has a task and a free core.
    """
    cap = qs.q_ptr[q + 1] - qs.q_ptr[q]
    task = qs.q_buf[qs.q_ptr[q] + qs.q_head[q]]
    qs.q_head[q] = (qs.q_head[q] + 1) % cap
    qs.q_len[q] -= 1
    qs.fc_len[q] -= 1
    return task, qs.fc_buf[qs.fc_ptr[q] + qs.fc_len[q]]
