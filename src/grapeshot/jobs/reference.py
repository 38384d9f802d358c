"""A plain-Python batch scheduler: the slow reference the compiled kernel is checked against.

Written for clarity with ``heapq`` and lists, with the semantics of
:mod:`grapeshot.jobs.scheduler` (same event order, same arithmetic, so the same floats). It
supports given predictions and AVE2, every correction, every backfilling mode and
checkpointing jobs. The rules themselves (the prediction clamp, when a correction fires, the
checkpoint arithmetic) are the kernel's own, from :mod:`grapeshot.jobs.rules`: what this
checks is the event loop around them.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from grapeshot.jobs.rules import (
    capped_correction,
    checkpoint_saved,
    checkpointed_wall,
    clamp_prediction,
    correction_fires,
    correction_time,
)
from grapeshot.jobs.scheduler import BACKFILL, CORRECT, END, PRED_AVE2, Jobs

# The rules as plain Python functions (the same source the kernel compiles).
_clamp = clamp_prediction.py_func
_fires = correction_fires.py_func
_when = correction_time.py_func
_capped = capped_correction.py_func
_saved = checkpoint_saved.py_func
_wall = checkpointed_wall.py_func


def reference_schedule(
    jobs: Jobs,
    capacity: int,
    pred: np.ndarray,
    increments: np.ndarray,
    lead: float,
    pred_mode: int,
    backfill: str,
    checkpoint: tuple[float, float] | None = None,
) -> dict[str, np.ndarray]:
    """Simulate; returns per job ``start`` (the first), ``end`` (the last), ``wtr0``, ``wtr``,
    ``ncorr``, ``killed``, ``ran``, ``waited`` and ``restarts``.

    Parameters are those of :class:`grapeshot.jobs.scheduler.KernelState` (``jobs``: its
    arrays, :func:`~grapeshot.jobs.scheduler.make_jobs`, read as lists; ``run`` is the jobs'
    work, without checkpoints) and its ``advance``; ``checkpoint = (every, cost)`` those of its
    ``checkpointing``.
    """
    n = len(jobs.submit)
    sub = [float(x) for x in jobs.submit]
    rn_ = [float(x) for x in jobs.run]
    sz = [int(x) for x in jobs.size]
    lim = [float(x) for x in jobs.limit]
    rq = [float(x) for x in jobs.req]
    us = [int(x) for x in jobs.user]
    inc = [float(x) for x in increments]
    bf = BACKFILL[backfill]
    start = [-1.0] * n
    end = [-1.0] * n
    wtr = [0.0] * n
    wtr0 = [0.0] * n
    ncorr = [0] * n
    killed = [False] * n
    every, cost = checkpoint if checkpoint is not None else (0.0, 0.0)
    work = list(rn_)
    need = [_wall(w, every, cost) for w in work]  # what the current segment runs
    ran = [0.0] * n
    waited = [0.0] * n
    queued = list(sub)
    first = [-1.0] * n
    restarts = [0] * n
    last: dict[int, list[float]] = {}
    heap: list[tuple[float, int, int]] = []
    queue: list[int] = []
    running: list[int] = []
    free = capacity
    nxt = 0

    def can(w: float, j: int) -> bool:
        return bool(inc) and _fires(w, need[j], lim[j], lead)

    def grow(w: float, c: int, j: int) -> float:
        return _capped(w + inc[min(c, len(inc) - 1)], w, lim[j])

    def begin(j: int, t: float) -> None:
        nonlocal free
        start[j] = t
        w, c = wtr[j], ncorr[j]
        while can(w, j) and _when(t, w, lead) <= t:
            w, c = grow(w, c, j), c + 1
        wtr[j], ncorr[j] = w, c
        wf, cf = w, c
        while can(wf, j):
            wf, cf = grow(wf, cf, j), cf + 1
        if need[j] > wf:
            killed[j] = True
            end[j] = t + wf
        else:
            end[j] = t + need[j]
        heapq.heappush(heap, (end[j], END, j))
        if can(w, j):
            heapq.heappush(heap, (_when(t, w, lead), CORRECT, j))
        free -= sz[j]
        running.append(j)

    def predicted_ends(t: float) -> list[tuple[float, int]]:
        return sorted((max(start[j] + wtr[j], t), j) for j in running)

    def easy(t: float, sjbf: bool) -> None:
        head = queue[0]
        avail = free
        shadow = math.inf
        ends = predicted_ends(t)
        for e, j in ends:
            avail += sz[j]
            if avail >= sz[head]:
                shadow = e
                break
        extra = free + sum(sz[j] for e, j in ends if e <= shadow) - sz[head]
        cands = queue[1:]
        if sjbf:
            cands = sorted(cands, key=lambda j: wtr[j])  # stable: ties in queue order
        for j in cands:
            if free == 0:
                break
            if sz[j] > free:
                continue
            in_time = t + wtr[j] <= shadow
            if in_time or sz[j] <= extra:
                if not in_time:
                    extra -= sz[j]
                begin(j, t)

    def conservative(t: float) -> None:
        # Profile: list of [time, free from this time on until the next entry].
        prof: list[list[float]] = [[t, float(free)]]
        for e, j in predicted_ends(t):
            if e == prof[-1][0]:
                prof[-1][1] += sz[j]
            else:
                prof.append([e, prof[-1][1] + sz[j]])
        for j in list(queue):
            w = wtr[j]
            k = 0
            while True:
                s = prof[k][0]
                # only entries inside [s, s + w) matter, and they are contiguous from k
                inside = [m for m in range(k, len(prof)) if prof[m][0] < s + w]
                bad = next((m for m in inside if prof[m][1] < sz[j]), None)
                if bad is None:
                    break
                k = bad + 1
            s = prof[k][0]
            e = s + w
            m = k
            while m < len(prof) and prof[m][0] < e:
                m += 1
            if m == len(prof) or prof[m][0] != e:
                prof.insert(m, [e, prof[m - 1][1]])
            for x in range(k, m):
                prof[x][1] -= sz[j]
            if s == t:
                begin(j, t)

    while True:
        ta = sub[nxt] if nxt < n else math.inf
        th = heap[0][0] if heap else math.inf
        t = min(ta, th)
        if t == math.inf:
            break
        while heap and heap[0][0] == t:
            _, kind, j = heapq.heappop(heap)
            if kind == END:
                free += sz[j]
                running.remove(j)
                ran[j] += end[j] - start[j]
                waited[j] += start[j] - queued[j]
                saved = _saved(end[j] - start[j], every, cost) if killed[j] and every else 0.0
                if saved > 0.0:  # resubmitted from its last checkpoint, walltime kept
                    work[j] -= saved
                    need[j] = _wall(work[j], every, cost)
                    if restarts[j] == 0:
                        first[j] = start[j]
                    restarts[j] += 1
                    killed[j] = False
                    start[j] = end[j] = -1.0
                    queued[j] = t
                    queue.append(j)
                    continue
                hist = last.setdefault(us[j], [])
                hist.insert(0, ran[j])
                del hist[2:]
            else:
                w, c = wtr[j], ncorr[j]
                while can(w, j) and _when(start[j], w, lead) <= t:
                    w, c = grow(w, c, j), c + 1
                wtr[j], ncorr[j] = w, c
                if can(w, j):
                    heapq.heappush(heap, (_when(start[j], w, lead), CORRECT, j))
        while nxt < n and sub[nxt] == t:
            if pred_mode == PRED_AVE2:
                hist = last.get(us[nxt], [])
                p = 0.5 * (hist[0] + hist[1]) if len(hist) >= 2 else rq[nxt]
                p = _clamp(p, rq[nxt])
            else:
                p = float(pred[nxt])
            wtr[nxt] = wtr0[nxt] = p
            queue.append(nxt)
            nxt += 1
        if queue:
            if bf == BACKFILL["conservative"]:
                conservative(t)
            else:
                while queue and sz[queue[0]] <= free:
                    begin(queue.pop(0), t)
                if bf != BACKFILL["fcfs"] and len(queue) > 1 and free > 0:
                    easy(t, bf == BACKFILL["sjbf"])
            queue[:] = [j for j in queue if start[j] < 0.0]
    return {
        "start": np.where(np.array(restarts) > 0, first, start),
        "end": np.array(end),
        "wtr0": np.array(wtr0),
        "wtr": np.array(wtr),
        "ncorr": np.array(ncorr),
        "killed": np.array(killed),
        "ran": np.array(ran),
        "waited": np.array(waited),
        "restarts": np.array(restarts),
    }
