"""The event-driven batch scheduler, compiled with numba.

One kernel simulates a cluster of ``capacity`` identical resources (CPUs, or whole nodes) and a
queue ordered by submit time (FCFS). Events are job arrivals (read in submit order), job ends
and walltime corrections (a binary heap keyed by (time, kind, job): ends before corrections
before arrivals at the same instant, ties by job). After the events of an instant the
scheduler makes one pass:

``fcfs``
    Start jobs from the head of the queue while the head fits.
``easy``
    FCFS, then EASY backfilling: the blocked head gets a reservation at the *shadow time* (the
    earliest predicted end of running jobs at which it fits); any later job may start now if it
    fits and its predicted end is before the shadow time, or if it uses no more than the
    *extra* resources left over at the shadow time (Mu'alem & Feitelson, TPDS 2001).
``sjbf``
    EASY with backfill candidates tried shortest predicted walltime first (EASY++).
``conservative``
    Every queued job, in order, gets the earliest reservation that delays no earlier one; jobs
    whose reservation is now start (re-planned from scratch each pass, i.e. with compression).

The scheduler sees only predicted walltimes; a job really ends at ``start + min(run, limit')``
where ``limit'`` is the walltime after corrections (see :mod:`grapeshot.jobs.correct`). With
checkpointing (:meth:`KernelState.checkpointing`, :mod:`grapeshot.jobs.checkpoint`) ``run`` is
what the job's current run needs with its checkpoints, and a job killed after writing one is
queued again with the rest of its work (:func:`_requeue`). The rules themselves (prediction
clamp, corrections, checkpoint arithmetic) are :mod:`grapeshot.jobs.rules`, shared with the
reference and the plug-in paths.

The kernel can stop after a number of completions and resume, so a predictor can be retrained
on the jobs completed so far and predict the jobs not yet submitted (no peeking).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cfunc, float64, int64, njit, uintp

from grapeshot.jobs.rules import (
    NO_CORRECTION,
    capped_correction,
    checkpoint_saved,
    checkpointed_wall,
    clamp_prediction,
    correction_fires,
    correction_time,
)

BACKFILL: dict[str, int] = {"fcfs": 0, "easy": 1, "sjbf": 2, "conservative": 3}
END, CORRECT = 0, 1
PRED_GIVEN, PRED_AVE2, PRED_ASK, PRED_CALL, PRED_CALL_CORRECT = 0, 1, 2, 3, 4
#: Most corrections one job may get from a plug-in (more is a correction that never grows
#: enough, e.g. +1 ms each time: refused rather than looped).
MAX_CORRECTIONS = 10_000

# Integer state slots.
S_NEXT, S_QN, S_RN, S_FREE, S_HN, S_DONE, S_STATUS = 0, 1, 2, 3, 4, 5, 6
# Why a PRED_CALL run returned early (ist[S_STATUS]; the job is ist[S_NEXT]): the correction
# chains need room, or the plug-in's answer (fst[1]) is not a positive number of seconds.
ST_GROW, ST_BAD_PREDICTION, ST_BAD_CORRECTION, ST_TOO_MANY = 1, 2, 3, 4

#: The signatures of a compiled plug-in's ``predict(job, done, ctx)`` and
#: ``correct(job, elapsed, limit, ctx)`` as the kernel calls them (``ctx``: the address of the
#: table of arrays they read, see :mod:`grapeshot.jobs.plugin_compiled`).
PREDICT_SIG = float64(int64, int64, uintp)
CORRECT_SIG = float64(int64, float64, float64, uintp)


def _no_correct(j, elapsed, limit, ctx):
    return 0.0


@functools.cache
def no_correct() -> object:
    """The ``cfn`` of a compiled plug-in without ``correct`` (never called: ``PRED_CALL``),
    compiled on first use, not at import: a C callback loads numba's whole compiler."""
    return cfunc(CORRECT_SIG, cache=True)(_no_correct)


@njit(cache=True)
def _less(t1: float, k1: int, j1: int, t2: float, k2: int, j2: int) -> bool:
    if t1 != t2:
        return t1 < t2
    if k1 != k2:
        return k1 < k2
    return j1 < j2


@njit(cache=True)
def _push(ht, hk, hj, n, time, kind, job):
    i = n
    ht[i] = time
    hk[i] = kind
    hj[i] = job
    while i > 0:
        p = (i - 1) // 2
        if _less(ht[i], hk[i], hj[i], ht[p], hk[p], hj[p]):
            ht[i], ht[p] = ht[p], ht[i]
            hk[i], hk[p] = hk[p], hk[i]
            hj[i], hj[p] = hj[p], hj[i]
            i = p
        else:
            break
    return n + 1


@njit(cache=True)
def _pop(ht, hk, hj, n):
    n -= 1
    ht[0] = ht[n]
    hk[0] = hk[n]
    hj[0] = hj[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _less(ht[c + 1], hk[c + 1], hj[c + 1], ht[c], hk[c], hj[c]):
            c += 1
        if _less(ht[c], hk[c], hj[c], ht[i], hk[i], hj[i]):
            ht[i], ht[c] = ht[c], ht[i]
            hk[i], hk[c] = hk[c], hk[i]
            hj[i], hj[c] = hj[c], hj[i]
            i = c
        else:
            break
    return n


@njit(cache=True)
def _corrected(j, w, c, run, limit, incr, lead, cptr, cwall):
    """Job ``j``'s walltime after its next correction, or ``NO_CORRECTION`` if none fires.

    With a table of increments (``incr``; ``cptr`` empty) a correction fires while the job is
    still running ``lead`` s before its walltime ``w`` and ``w`` is below the hard limit; the
    ``c``-th adds ``incr[min(c, len - 1)]``, capped at the limit. With per-job chains (a
    plug-in policy's corrections, computed when the job was predicted) the ``c``-th correction
    of job ``j`` sets ``cwall[cptr[j] + c]``, if the chain is that long.
    """
    if len(cptr):
        k = cptr[j] + c
        return cwall[k] if k < cptr[j + 1] else NO_CORRECTION
    if len(incr) == 0 or not correction_fires(w, run[j], limit[j], lead):
        return NO_CORRECTION
    return capped_correction(w + incr[c if c < len(incr) else len(incr) - 1], w, limit[j])


@njit(cache=True)
def _final_wall(j, w, c, run, limit, incr, lead, cptr, cwall):
    """Job ``j``'s walltime once every correction after its ``c``-th (at walltime ``w``) has
    fired: it runs ``min(run, that)`` seconds."""
    while True:
        nw = _corrected(j, w, c, run, limit, incr, lead, cptr, cwall)
        if nw == NO_CORRECTION:
            return w
        w = nw
        c += 1


@njit(cache=True)
def _quiet_until(t, run, size, limit, incr, lead, cptr, cwall, wtr, end, running, queue, ist):
    """A time before which no job can end: the earliest end of the running jobs, and ``t``
    plus the shortest time a queued job that fits in the free resources can run (none frees
    before the first of those ends, so a job that does not fit now cannot start before)."""
    q = np.inf
    for r in range(ist[S_RN]):
        e = end[running[r]]
        if e < q:
            q = e
    free = ist[S_FREE]
    for i in range(ist[S_QN] if free > 0 else 0):
        j = queue[i]
        if size[j] > free:
            continue
        w = _final_wall(j, wtr[j], 0, run, limit, incr, lead, cptr, cwall)
        e = t + (run[j] if run[j] < w else w)
        if e < q:
            q = e
    return q


@njit(cache=True)
def _fire_due(j, t, run, limit, incr, cptr, cwall, lead, start, wtr, ncorr, noop, ist, ht, hk, hj):
    """Fire running job ``j``'s corrections due by ``t`` (each ``lead`` s before its walltime
    then), count those that change nothing, and schedule its next one, if any."""
    w = wtr[j]
    c = ncorr[j]
    while True:
        nw = _corrected(j, w, c, run, limit, incr, lead, cptr, cwall)
        if nw == NO_CORRECTION or correction_time(start[j], w, lead) > t:
            break
        if run[j] <= w:  # it would have ended within the walltime it had
            noop[j] += 1
        w = nw
        c += 1
    wtr[j] = w
    ncorr[j] = c
    if _corrected(j, w, c, run, limit, incr, lead, cptr, cwall) != NO_CORRECTION:
        ist[S_HN] = _push(ht, hk, hj, ist[S_HN], correction_time(start[j], w, lead), CORRECT, j)


@njit(cache=True)
def _start(
    j,
    t,
    run,
    size,
    limit,
    incr,
    cptr,
    cwall,
    lead,
    wtr,
    start,
    end,
    ncorr,
    noop,
    killed,
    running,
    pos,
    ist,
    ht,
    hk,
    hj,
):
    """Start job ``j`` at ``t``: fire due corrections, schedule its end and next correction."""
    start[j] = t
    # Corrections due at the start (a walltime within ``lead`` s of 0), and the next one.
    _fire_due(j, t, run, limit, incr, cptr, cwall, lead, start, wtr, ncorr, noop, ist, ht, hk, hj)
    # Where the corrections will stop: the job's final walltime decides whether it is killed.
    wf = _final_wall(j, wtr[j], ncorr[j], run, limit, incr, lead, cptr, cwall)
    if run[j] > wf:
        killed[j] = 1
        end[j] = t + wf
    else:
        end[j] = t + run[j]
    ist[S_HN] = _push(ht, hk, hj, ist[S_HN], end[j], END, j)
    ist[S_FREE] -= size[j]
    pos[j] = ist[S_RN]
    running[ist[S_RN]] = j
    ist[S_RN] += 1


@njit(cache=True)
def _shadow(t, need, size, wtr, start, running, rn, free):
    """Shadow time and extra resources for a blocked job needing ``need``."""
    pe = np.empty(rn)
    for r in range(rn):
        j = running[r]
        e = start[j] + wtr[j]
        pe[r] = e if e > t else t
    order = np.argsort(pe, kind="mergesort")
    avail = free
    shadow = np.inf
    for r in order:
        avail += size[running[r]]
        if avail >= need:
            shadow = pe[r]
            break
    at_shadow = free
    for r in range(rn):
        if pe[r] <= shadow:
            at_shadow += size[running[r]]
    return shadow, at_shadow - need


@njit(cache=True)
def _conservative(
    t,
    run,
    size,
    limit,
    incr,
    cptr,
    cwall,
    lead,
    wtr,
    start,
    end,
    ncorr,
    noop,
    killed,
    running,
    pos,
    ist,
    ht,
    hk,
    hj,
    queue,
):
    """Plan every queued job at its earliest slot in order; start those planned for now."""
    qn = ist[S_QN]
    rn = ist[S_RN]
    cap = rn + 2 * qn + 2
    pt = np.empty(cap)
    pf = np.empty(cap, dtype=np.int64)
    pe = np.empty(rn)
    for r in range(rn):
        j = running[r]
        e = start[j] + wtr[j]
        pe[r] = e if e > t else t
    order = np.argsort(pe, kind="mergesort")
    npf = 1
    pt[0] = t
    pf[0] = ist[S_FREE]
    for r in order:
        if pe[r] == pt[npf - 1]:
            pf[npf - 1] += size[running[r]]
        else:
            pt[npf] = pe[r]
            pf[npf] = pf[npf - 1] + size[running[r]]
            npf += 1
    for qi in range(qn):
        j = queue[qi]
        w = wtr[j]
        need = size[j]
        k = 0
        while True:
            s = pt[k]
            m = k
            ok = True
            while m < npf and pt[m] < s + w:
                if pf[m] < need:
                    ok = False
                    break
                m += 1
            if ok:
                break
            k = m + 1
        s = pt[k]
        e = s + w
        # Breakpoint at e (s is already one).
        m = k
        while m < npf and pt[m] < e:
            m += 1
        if m == npf or pt[m] != e:
            for x in range(npf, m, -1):
                pt[x] = pt[x - 1]
                pf[x] = pf[x - 1]
            pt[m] = e
            pf[m] = pf[m - 1]
            npf += 1
        for x in range(k, m):
            pf[x] -= need
        if s == t:
            _start(
                j,
                t,
                run,
                size,
                limit,
                incr,
                cptr,
                cwall,
                lead,
                wtr,
                start,
                end,
                ncorr,
                noop,
                killed,
                running,
                pos,
                ist,
                ht,
                hk,
                hj,
            )


@njit(cache=True)
def _schedule(
    t,
    backfill,
    run,
    size,
    limit,
    incr,
    cptr,
    cwall,
    lead,
    wtr,
    start,
    end,
    ncorr,
    noop,
    killed,
    running,
    pos,
    ist,
    ht,
    hk,
    hj,
    queue,
):
    qn = ist[S_QN]
    if qn == 0:
        return
    if backfill == 3:
        _conservative(
            t,
            run,
            size,
            limit,
            incr,
            cptr,
            cwall,
            lead,
            wtr,
            start,
            end,
            ncorr,
            noop,
            killed,
            running,
            pos,
            ist,
            ht,
            hk,
            hj,
            queue,
        )
    else:
        h = 0
        while h < qn and size[queue[h]] <= ist[S_FREE]:
            _start(
                queue[h],
                t,
                run,
                size,
                limit,
                incr,
                cptr,
                cwall,
                lead,
                wtr,
                start,
                end,
                ncorr,
                noop,
                killed,
                running,
                pos,
                ist,
                ht,
                hk,
                hj,
            )
            h += 1
        if backfill != 0 and h < qn - 1 and ist[S_FREE] > 0:
            head = queue[h]
            shadow, extra = _shadow(
                t, size[head], size, wtr, start, running, ist[S_RN], ist[S_FREE]
            )
            cand = queue[h + 1 : qn]
            if backfill == 2:
                keys = np.empty(len(cand))
                for c in range(len(cand)):
                    keys[c] = wtr[cand[c]]
                cand = cand[np.argsort(keys, kind="mergesort")]
            for j in cand:
                if ist[S_FREE] == 0:
                    break
                sz = size[j]
                if sz > ist[S_FREE]:
                    continue
                ends_in_time = t + wtr[j] <= shadow
                if ends_in_time or sz <= extra:
                    if not ends_in_time:
                        extra -= sz
                    _start(
                        j,
                        t,
                        run,
                        size,
                        limit,
                        incr,
                        cptr,
                        cwall,
                        lead,
                        wtr,
                        start,
                        end,
                        ncorr,
                        noop,
                        killed,
                        running,
                        pos,
                        ist,
                        ht,
                        hk,
                        hj,
                    )
    # Compact the queue, keeping submit order.
    k = 0
    for i in range(qn):
        j = queue[i]
        if start[j] < 0.0:
            queue[k] = j
            k += 1
    ist[S_QN] = k


@njit(cache=True)
def _call_plugin(j, done, run, limit, req, lead, cptr, cwall, pfn, cfn, ctx, fst, corrects):
    """Ask a compiled plug-in for job ``j``'s walltime (into ``fst[1]``) and its corrections
    (into ``cwall`` from ``cptr[j]``, as a Python plug-in's chain); 0, or why not (``ST_*``).
    """
    k = cptr[j]
    if k + MAX_CORRECTIONS > len(cwall):
        return ST_GROW
    p = pfn(j, done, ctx.ctypes.data)
    if not (p > 0.0 and p < np.inf):  # an exception in the plug-in returns 0
        fst[1] = p
        return ST_BAD_PREDICTION
    w = clamp_prediction(p, req[j])
    fst[1] = w
    while corrects and correction_fires(w, run[j], limit[j], lead):
        new = cfn(j, w - lead, w, ctx.ctypes.data)
        if not (new > 0.0 and new < np.inf):
            fst[1] = new
            return ST_BAD_CORRECTION
        new = capped_correction(new, w, limit[j])
        if new == NO_CORRECTION:
            break
        if k - cptr[j] == MAX_CORRECTIONS:
            return ST_TOO_MANY
        cwall[k] = new
        k += 1
        w = new
    cptr[j + 1] = k
    return 0


@njit(cache=True)
def _requeue(j, t, ckpt, run, work, killed, start, end, queued, first, restarts, queue, ist):
    """Resubmit job ``j``, killed at ``t``, from its last checkpoint: True if it wrote one.

    ``ckpt = (every, cost)``: a checkpoint after every ``every`` s of work, taking ``cost``
    s. The job queues again at ``t`` (behind the jobs waiting, before this instant's
    arrivals) with the work its checkpoints did not save, and the walltime it was killed at
    (a requeued Slurm job keeps its time limit): ``run[j]`` becomes what the rest takes with
    its own checkpoints. Without a checkpoint the kill stands, as without checkpointing.
    """
    saved = checkpoint_saved(end[j] - start[j], ckpt[0], ckpt[1])
    if not saved > 0.0:
        return False
    work[j] -= saved
    run[j] = checkpointed_wall(work[j], ckpt[0], ckpt[1])
    if restarts[j] == 0:
        first[j] = start[j]
    restarts[j] += 1
    killed[j] = 0
    start[j] = -1.0
    end[j] = -1.0
    queued[j] = t
    queue[ist[S_QN]] = j
    ist[S_QN] += 1
    return True


@njit(cache=True)
def run_kernel(
    submit,
    run,
    size,
    limit,
    pred0,
    req,
    user,
    incr,
    cptr,
    cwall,
    lead,
    pred_mode,
    backfill,
    ist,
    fst,
    queue,
    running,
    pos,
    ht,
    hk,
    hj,
    start,
    end,
    wtr,
    wtr0,
    ncorr,
    noop,
    killed,
    fin,
    dord,
    dstart,
    dend,
    duser,
    pver,
    ulast1,
    ulast2,
    ucount,
    ckpt,
    work,
    ran,
    waited,
    queued,
    first,
    restarts,
    pfn,
    cfn,
    ctx,
    stop_after,
):
    """Advance the simulation; return True when every job has ended.

    All arrays are per job (sorted by submit) or per user; ``ist``/``fst`` hold the integer and
    float scalars (see the ``S_*`` slots) so the state survives between calls. With
    ``stop_after > 0`` the call returns (False) after the scheduling pass in which the
    ``stop_after``-th completion of this call happened. With ``pred_mode == PRED_ASK`` it
    also returns (False) at the arrival of a job whose prediction was not made on the jobs
    completed so far (``pver[j]``, the completions it saw, differs from the count now).
    ``dord`` receives the jobs in the order they completed, ``dstart``, ``dend`` and ``duser``
    their start, end and user in that order. With ``pred_mode == PRED_CALL`` the compiled
    plug-in ``pfn`` (and ``cfn`` with ``PRED_CALL_CORRECT``) predicts each arriving job
    (:func:`_call_plugin`); the call returns (False) with ``ist[S_STATUS]`` set if it cannot go
    on. With ``ckpt[0] > 0`` jobs checkpoint and a killed job is requeued (:func:`_requeue`);
    ``ran`` and ``waited`` sum each job's segments (seconds run, seconds queued).
    """
    n = len(submit)
    done_at_call = ist[S_DONE]
    while True:
        na = ist[S_NEXT]
        ta = submit[na] if na < n else np.inf
        th = ht[0] if ist[S_HN] > 0 else np.inf
        t = ta if ta < th else th
        if t == np.inf:
            return True
        fst[0] = t
        while ist[S_HN] > 0 and ht[0] == t:
            kind = hk[0]
            j = hj[0]
            ist[S_HN] = _pop(ht, hk, hj, ist[S_HN])
            if kind == END:
                ist[S_FREE] += size[j]
                r = pos[j]
                last = running[ist[S_RN] - 1]
                running[r] = last
                pos[last] = r
                ist[S_RN] -= 1
                ran[j] += end[j] - start[j]
                waited[j] += start[j] - queued[j]
                if killed[j] and ckpt[0] > 0.0:
                    if _requeue(j, t, ckpt, run, work, killed, start, end, queued, first,
                                restarts, queue, ist):  # fmt: skip
                        continue  # not a completion: the job waits again
                u = user[j]
                ulast2[u] = ulast1[u]
                ulast1[u] = ran[j]
                ucount[u] += 1
                fin[j] = 1
                k = ist[S_DONE]
                dord[k] = j
                dstart[k] = start[j]
                dend[k] = end[j]
                duser[k] = u
                ist[S_DONE] += 1
            else:
                _fire_due(
                    j, t, run, limit, incr, cptr, cwall, lead, start, wtr, ncorr, noop, ist, ht,
                    hk, hj,
                )  # fmt: skip
        while na < n and submit[na] == t:
            if pred_mode == PRED_ASK and pver[na] != ist[S_DONE]:
                # The prediction of job ``na`` (if any) was made before the latest completion:
                # return for one made on the jobs completed so far (this instant's ends are
                # in; the arrivals and the scheduling pass of ``t`` resume on the next call).
                # ``fst[1]``: until when the jobs completed stay these (the caller may predict
                # every arrival before that at once).
                ist[S_NEXT] = na
                fst[1] = _quiet_until(
                    t, run, size, limit, incr, lead, cptr, cwall, wtr, end, running, queue, ist
                )
                return False
            if pfn is not None and pred_mode >= PRED_CALL:  # pruned when compiled without
                status = _call_plugin(
                    na, ist[S_DONE], run, limit, req, lead, cptr, cwall, pfn, cfn, ctx, fst,
                    pred_mode == PRED_CALL_CORRECT,
                )  # fmt: skip
                if status != 0:
                    ist[S_NEXT] = na
                    ist[S_STATUS] = status
                    return False
            if pred_mode == PRED_AVE2:
                u = user[na]
                p = req[na]
                if ucount[u] >= 2:
                    p = 0.5 * (ulast1[u] + ulast2[u])
                p = clamp_prediction(p, req[na])
            elif pred_mode >= PRED_CALL:
                p = fst[1]
            else:
                p = pred0[na]
            wtr[na] = p
            wtr0[na] = p
            queue[ist[S_QN]] = na
            ist[S_QN] += 1
            na += 1
        ist[S_NEXT] = na
        _schedule(
            t,
            backfill,
            run,
            size,
            limit,
            incr,
            cptr,
            cwall,
            lead,
            wtr,
            start,
            end,
            ncorr,
            noop,
            killed,
            running,
            pos,
            ist,
            ht,
            hk,
            hj,
            queue,
        )
        if stop_after > 0 and ist[S_DONE] - done_at_call >= stop_after:
            return False


class KernelState:
    """The arrays of one simulation, allocated once and advanced by :func:`run_kernel`.

    Parameters
    ----------
    submit, run, limit, req
        Seconds per job, sorted by submit: arrival, actual run time, hard kill limit (the
        walltime can never grow beyond it), user request (caps AVE2 predictions).
    size
        Resources per job (CPUs or nodes), each ``<= capacity``.
    user
        Dense user index per job, 0 … U−1.
    capacity
        Resources of the machine.
    """

    def __init__(
        self,
        submit: np.ndarray,
        run: np.ndarray,
        size: np.ndarray,
        limit: np.ndarray,
        req: np.ndarray,
        user: np.ndarray,
        capacity: int,
    ) -> None:
        n = len(submit)
        self.submit = np.ascontiguousarray(submit, dtype=np.float64)
        self.run = np.ascontiguousarray(run, dtype=np.float64)
        self.size = np.ascontiguousarray(size, dtype=np.int64)
        self.limit = np.ascontiguousarray(limit, dtype=np.float64)
        self.req = np.ascontiguousarray(req, dtype=np.float64)
        self.user = np.ascontiguousarray(user, dtype=np.int64)
        n_users = int(self.user.max()) + 1 if n else 1
        self.ist = np.zeros(7, dtype=np.int64)
        self.ist[S_FREE] = capacity
        # The time now; a time before which no job ends (PRED_ASK) or a plug-in's answer.
        self.fst = np.zeros(2)
        self.queue = np.zeros(n, dtype=np.int64)
        self.running = np.zeros(n, dtype=np.int64)
        self.pos = np.zeros(n, dtype=np.int64)
        self.ht = np.zeros(2 * n + 2)
        self.hk = np.zeros(2 * n + 2, dtype=np.int64)
        self.hj = np.zeros(2 * n + 2, dtype=np.int64)
        self.start = np.full(n, -1.0)
        self.end = np.full(n, -1.0)
        self.wtr = np.zeros(n)
        self.wtr0 = np.zeros(n)
        self.ncorr = np.zeros(n, dtype=np.int64)
        self.noop = np.zeros(n, dtype=np.int64)
        self.killed = np.zeros(n, dtype=np.int8)
        self.fin = np.zeros(n, dtype=np.int8)
        self.done_order = np.zeros(n, dtype=np.int64)
        self.done_start = np.zeros(n)
        self.done_end = np.zeros(n)
        self.done_user = np.zeros(n, dtype=np.int64)
        self.pver = np.full(n, -1, dtype=np.int64)
        self.ulast1 = np.zeros(n_users)
        self.ulast2 = np.zeros(n_users)
        self.ucount = np.zeros(n_users, dtype=np.int64)
        # Checkpointing (see checkpointing()): (every, cost) seconds, off while every == 0;
        # per job the work left, the seconds run and queued over its segments, when its
        # current segment was queued, its first start, and its resubmissions.
        self.ckpt = np.zeros(2)
        self.work = self.run  # the kernel writes it (and run) only when checkpointing
        self.ran = np.zeros(n)
        self.waited = np.zeros(n)
        self.queued = self.submit.copy()
        self.first = np.full(n, -1.0)
        self.restarts = np.zeros(n, dtype=np.int64)

    def checkpointing(self, every: float, cost: float) -> None:
        """Make every job checkpoint after each ``every`` s of work, at ``cost`` s each, and
        a killed job resume from its last checkpoint (:func:`_requeue`); call before
        :meth:`advance`. A job then runs its work plus its checkpoints
        (:func:`grapeshot.jobs.rules.checkpointed_wall`)."""
        self.ckpt[:] = (every, cost)
        # Own copies: the kernel rewrites both at each requeue, and ``run`` may be the
        # caller's array (ascontiguousarray does not copy).
        self.work = self.run.copy()
        self.run = np.empty_like(self.work)
        _with_checkpoints(self.work, every, cost, self.run)

    def first_start(self) -> np.ndarray:
        """When each job first started, seconds (its last segment's start unless requeued)."""
        return np.where(self.restarts > 0, self.first, self.start)

    @property
    def next_arrival(self) -> int:
        """Index of the first job not yet submitted."""
        return int(self.ist[S_NEXT])

    def finished_jobs(self) -> np.ndarray:
        """Indices of the jobs that have ended, in index order."""
        return np.flatnonzero(self.fin)

    def advance(
        self,
        pred0: np.ndarray,
        incr: np.ndarray,
        lead: float,
        pred_mode: int,
        backfill: int,
        stop_after: int = 0,
        chains: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> bool:
        """Run the kernel until the end, or until ``stop_after`` more jobs have completed.

        ``chains`` = ``(cptr, cwall)``: per-job correction chains (job ``j``'s successive
        walltimes are ``cwall[cptr[j]:cptr[j + 1]]``), replacing the table ``incr``.
        """
        args = self.kernel_args(pred0, incr, lead, pred_mode, backfill, stop_after, chains)
        return bool(run_kernel(*args))

    def kernel_args(
        self,
        pred0: np.ndarray,
        incr: np.ndarray,
        lead: float,
        pred_mode: int,
        backfill: int,
        stop_after: int = 0,
        chains: tuple[np.ndarray, np.ndarray] | None = None,
        plugin: tuple | None = None,
    ) -> tuple:
        """The arguments of :func:`run_kernel` for :meth:`advance`; a caller that resumes the
        kernel once per job (a plug-in policy) builds them once and calls ``run_kernel``.
        ``plugin`` = ``(pfn, cfn, ctx)``: a compiled plug-in (``PRED_CALL*`` modes); without
        it the kernel is compiled with ``None`` there (calling through C callbacks' types costs
        ~45 µs per call of the kernel, which a Python plug-in makes once per few jobs)."""
        cptr, cwall = chains if chains is not None else (_NO_CHAIN, _NO_WALLS)
        return (
            self.submit, self.run, self.size, self.limit,
            np.ascontiguousarray(pred0, dtype=np.float64), self.req, self.user,
            np.ascontiguousarray(incr, dtype=np.float64), cptr, cwall, float(lead),
            int(pred_mode), int(backfill), self.ist, self.fst, self.queue, self.running,
            self.pos, self.ht, self.hk, self.hj, self.start, self.end, self.wtr, self.wtr0,
            self.ncorr, self.noop, self.killed, self.fin, self.done_order, self.done_start,
            self.done_end, self.done_user, self.pver, self.ulast1, self.ulast2, self.ucount,
            self.ckpt, self.work, self.ran, self.waited, self.queued, self.first, self.restarts,
            *(plugin if plugin is not None else (None, None, None)),
            int(stop_after),
        )  # fmt: skip


@njit(cache=True)
def _with_checkpoints(work, every, cost, out):
    for j in range(len(work)):
        out[j] = checkpointed_wall(work[j], every, cost)


_NO_CHAIN = np.zeros(0, dtype=np.int64)
_NO_WALLS = np.zeros(0)
