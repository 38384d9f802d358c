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

Its state travels in four records, named tuples of arrays and scalars, as the simulator's
kernel does (:mod:`grapeshot.sim.kernel_state`): :class:`Jobs`, :class:`Policy`,
:class:`Sched` and :class:`Done`; a new state array is one field, and every function takes
the records, not their arrays. The functions that allocate nothing are compiled without
numba's memory manager (``_nrt=False``): with it, each call reference-counts every array of
every record it is handed, which made ``benchmarks/bench_jobs.py`` twice as slow. The
scheduling passes (:func:`_schedule`, :func:`_conservative`), which allocate their scratch
arrays, keep it; they run once per instant.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

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


@njit(cache=True, _nrt=False)
def _less(t1: float, k1: int, j1: int, t2: float, k2: int, j2: int) -> bool:
    if t1 != t2:
        return t1 < t2
    if k1 != k2:
        return k1 < k2
    return j1 < j2


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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


class Jobs(NamedTuple):
    """The jobs, sorted by submit (``n`` of them, ``U`` users): what they are and need.

    The kernel rewrites ``run`` and ``work`` only when checkpointing (:func:`_requeue`).
    """

    submit: np.ndarray  #: float64, (n,): arrival, s
    run: np.ndarray  #: float64, (n,): what the job's current run takes, s
    size: np.ndarray  #: int64, (n,): resources (CPUs or nodes), each <= capacity
    limit: np.ndarray  #: float64, (n,): hard kill limit, s (the walltime never grows beyond)
    req: np.ndarray  #: float64, (n,): user request, s (caps AVE2 predictions)
    user: np.ndarray  #: int64, (n,): dense user index, 0 … U−1
    work: np.ndarray  #: float64, (n,): work left, s (checkpointing; else ``run`` itself)
    ckpt: np.ndarray  #: float64, (2,): checkpoint every, cost, s (off while every == 0)


def make_jobs(
    submit: np.ndarray,
    run: np.ndarray,
    size: np.ndarray,
    limit: np.ndarray,
    req: np.ndarray,
    user: np.ndarray,
) -> Jobs:
    """The :class:`Jobs` record of these arrays (the fields' dtypes, contiguous; copied only
    if need be), not checkpointing: ``work`` is ``run`` itself."""
    run = np.ascontiguousarray(run, dtype=np.float64)
    return Jobs(
        submit=np.ascontiguousarray(submit, dtype=np.float64),
        run=run,
        size=np.ascontiguousarray(size, dtype=np.int64),
        limit=np.ascontiguousarray(limit, dtype=np.float64),
        req=np.ascontiguousarray(req, dtype=np.float64),
        user=np.ascontiguousarray(user, dtype=np.int64),
        work=run,  # the kernel writes it (and run) only when checkpointing
        ckpt=np.zeros(2),  # see KernelState.checkpointing()
    )


class Policy(NamedTuple):
    """How one call of :func:`run_kernel` predicts, corrects and schedules."""

    pred0: np.ndarray  #: float64, (n,): given predictions, s (``PRED_GIVEN``)
    incr: np.ndarray  #: float64, (k,): the correction table's increments, s (or empty)
    cptr: np.ndarray  #: int64, (n + 1,) or empty: job j's corrections are cwall[cptr[j]:cptr[j+1]]
    cwall: np.ndarray  #: float64: the per-job correction chains' successive walltimes, s
    lead: float  #: a correction fires this many s before the walltime
    pred_mode: int  #: ``PRED_*``
    backfill: int  #: :data:`BACKFILL` value
    stop_after: int  #: return after this many completions of the call (0: run to the end)


class Sched(NamedTuple):
    """The scheduler's state: scalars, the queue, the running jobs, the event heap, per job
    when it started, ends and its walltime now."""

    ist: np.ndarray  #: int64, (7,): the ``S_*`` slots
    fst: np.ndarray  #: float64, (2,): the time now; a quiet-until time or a plug-in's answer
    queue: np.ndarray  #: int64, (n,): the waiting jobs in submit order (``ist[S_QN]`` of them)
    running: np.ndarray  #: int64, (n,): the running jobs (``ist[S_RN]`` of them)
    pos: np.ndarray  #: int64, (n,): each running job's index in ``running``
    ht: np.ndarray  #: float64, (2n + 2,): the event heap's times, s
    hk: np.ndarray  #: int64, (2n + 2,): its kinds (``END``, ``CORRECT``)
    hj: np.ndarray  #: int64, (2n + 2,): its jobs
    start: np.ndarray  #: float64, (n,): start of the current run, s (-1: not started)
    end: np.ndarray  #: float64, (n,): end of the current run, s (-1: not started)
    wtr: np.ndarray  #: float64, (n,): walltime now (prediction after corrections), s
    wtr0: np.ndarray  #: float64, (n,): the prediction at submission, s
    ncorr: np.ndarray  #: int64, (n,): corrections fired
    noop: np.ndarray  #: int64, (n,): corrections fired that changed nothing
    killed: np.ndarray  #: int8, (n,): killed at its walltime
    queued: np.ndarray  #: float64, (n,): when the job's current segment was queued, s


class Done(NamedTuple):
    """What the kernel reports: the completions in order, per user and per job."""

    fin: np.ndarray  #: int8, (n,): the job has completed
    done_order: np.ndarray  #: int64, (n,): the jobs in the order they completed
    done_start: np.ndarray  #: float64, (n,): their start, s, in that order
    done_end: np.ndarray  #: float64, (n,): their end, s
    done_user: np.ndarray  #: int64, (n,): their user
    pver: np.ndarray  #: int64, (n,): completions the job's prediction saw (-1: none yet)
    ulast1: np.ndarray  #: float64, (U,): each user's last completed job's seconds run
    ulast2: np.ndarray  #: float64, (U,): and the one before
    ucount: np.ndarray  #: int64, (U,): each user's completed jobs
    ran: np.ndarray  #: float64, (n,): seconds run over the job's segments
    waited: np.ndarray  #: float64, (n,): seconds queued over them
    first: np.ndarray  #: float64, (n,): first start, s (when requeued)
    restarts: np.ndarray  #: int64, (n,): resubmissions


@njit(cache=True, _nrt=False)
def _corrected(j, w, c, jobs, pol):
    """Job ``j``'s walltime after its next correction, or ``NO_CORRECTION`` if none fires.

    With a table of increments (``incr``; ``cptr`` empty) a correction fires while the job is
    still running ``lead`` s before its walltime ``w`` and ``w`` is below the hard limit; the
    ``c``-th adds ``incr[min(c, len - 1)]``, capped at the limit. With per-job chains (a
    plug-in policy's corrections, computed when the job was predicted) the ``c``-th correction
    of job ``j`` sets ``cwall[cptr[j] + c]``, if the chain is that long.
    """
    cptr = pol.cptr
    if len(cptr):
        k = cptr[j] + c
        return pol.cwall[k] if k < cptr[j + 1] else NO_CORRECTION
    incr = pol.incr
    limit = jobs.limit
    if len(incr) == 0 or not correction_fires(w, jobs.run[j], limit[j], pol.lead):
        return NO_CORRECTION
    return capped_correction(w + incr[c if c < len(incr) else len(incr) - 1], w, limit[j])


@njit(cache=True, _nrt=False)
def _final_wall(j, w, c, jobs, pol):
    """Job ``j``'s walltime once every correction after its ``c``-th (at walltime ``w``) has
    fired: it runs ``min(run, that)`` seconds."""
    while True:
        nw = _corrected(j, w, c, jobs, pol)
        if nw == NO_CORRECTION:
            return w
        w = nw
        c += 1


@njit(cache=True, _nrt=False)
def _quiet_until(t, jobs, pol, s):
    """A time before which no job can end: the earliest end of the running jobs, and ``t``
    plus the shortest time a queued job that fits in the free resources can run (none frees
    before the first of those ends, so a job that does not fit now cannot start before)."""
    run, size, wtr, end, running, queue, ist = (
        jobs.run, jobs.size, s.wtr, s.end, s.running, s.queue, s.ist
    )  # fmt: skip
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
        w = _final_wall(j, wtr[j], 0, jobs, pol)
        e = t + (run[j] if run[j] < w else w)
        if e < q:
            q = e
    return q


@njit(cache=True, _nrt=False)
def _fire_due(j, t, jobs, pol, s):
    """Fire running job ``j``'s corrections due by ``t`` (each ``lead`` s before its walltime
    then), count those that change nothing, and schedule its next one, if any."""
    lead, start = pol.lead, s.start
    w = s.wtr[j]
    c = s.ncorr[j]
    while True:
        nw = _corrected(j, w, c, jobs, pol)
        if nw == NO_CORRECTION or correction_time(start[j], w, lead) > t:
            break
        if jobs.run[j] <= w:  # it would have ended within the walltime it had
            s.noop[j] += 1
        w = nw
        c += 1
    s.wtr[j] = w
    s.ncorr[j] = c
    if _corrected(j, w, c, jobs, pol) != NO_CORRECTION:
        ist = s.ist
        ist[S_HN] = _push(
            s.ht, s.hk, s.hj, ist[S_HN], correction_time(start[j], w, lead), CORRECT, j
        )


@njit(cache=True, _nrt=False)
def _start(j, t, jobs, pol, s):
    """Start job ``j`` at ``t``: fire due corrections, schedule its end and next correction."""
    run, end, ist = jobs.run, s.end, s.ist
    s.start[j] = t
    # Corrections due at the start (a walltime within ``lead`` s of 0), and the next one.
    _fire_due(j, t, jobs, pol, s)
    # Where the corrections will stop: the job's final walltime decides whether it is killed.
    wf = _final_wall(j, s.wtr[j], s.ncorr[j], jobs, pol)
    if run[j] > wf:
        s.killed[j] = 1
        end[j] = t + wf
    else:
        end[j] = t + run[j]
    ist[S_HN] = _push(s.ht, s.hk, s.hj, ist[S_HN], end[j], END, j)
    ist[S_FREE] -= jobs.size[j]
    s.pos[j] = ist[S_RN]
    s.running[ist[S_RN]] = j
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
def _conservative(t, jobs, pol, s):
    """Plan every queued job at its earliest slot in order; start those planned for now."""
    size, wtr, start, running, queue, ist = jobs.size, s.wtr, s.start, s.running, s.queue, s.ist
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
            b = pt[k]
            m = k
            ok = True
            while m < npf and pt[m] < b + w:
                if pf[m] < need:
                    ok = False
                    break
                m += 1
            if ok:
                break
            k = m + 1
        b = pt[k]
        e = b + w
        # Breakpoint at e (b is already one).
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
        if b == t:
            _start(j, t, jobs, pol, s)


@njit(cache=True)
def _schedule(t, jobs, pol, s):
    """The scheduling pass of instant ``t`` (module docstring), then compact the queue."""
    size, wtr, start, queue, ist = jobs.size, s.wtr, s.start, s.queue, s.ist
    backfill = pol.backfill
    qn = ist[S_QN]
    if qn == 0:
        return
    if backfill == 3:
        _conservative(t, jobs, pol, s)
    else:
        h = 0
        while h < qn and size[queue[h]] <= ist[S_FREE]:
            _start(queue[h], t, jobs, pol, s)
            h += 1
        if backfill != 0 and h < qn - 1 and ist[S_FREE] > 0:
            head = queue[h]
            shadow, extra = _shadow(
                t, size[head], size, wtr, start, s.running, ist[S_RN], ist[S_FREE]
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
                    _start(j, t, jobs, pol, s)
    # Compact the queue, keeping submit order.
    k = 0
    for i in range(qn):
        j = queue[i]
        if start[j] < 0.0:
            queue[k] = j
            k += 1
    ist[S_QN] = k


@njit(cache=True, _nrt=False)
def _call_plugin(j, done, jobs, pol, pfn, cfn, ctx, fst):
    """Ask a compiled plug-in for job ``j``'s walltime (into ``fst[1]``) and, with
    ``PRED_CALL_CORRECT``, its corrections (into ``cwall`` from ``cptr[j]``, as a Python
    plug-in's chain); 0, or why not (``ST_*``).
    """
    cptr, cwall, lead, limit = pol.cptr, pol.cwall, pol.lead, jobs.limit
    k = cptr[j]
    if k + MAX_CORRECTIONS > len(cwall):
        return ST_GROW
    p = pfn(j, done, ctx.ctypes.data)
    if not (p > 0.0 and p < np.inf):  # an exception in the plug-in returns 0
        fst[1] = p
        return ST_BAD_PREDICTION
    w = clamp_prediction(p, jobs.req[j])
    fst[1] = w
    corrects = pol.pred_mode == PRED_CALL_CORRECT
    while corrects and correction_fires(w, jobs.run[j], limit[j], lead):
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


@njit(cache=True, _nrt=False)
def _requeue(j, t, jobs, s, out):
    """Resubmit job ``j``, killed at ``t``, from its last checkpoint: True if it wrote one.

    ``ckpt = (every, cost)``: a checkpoint after every ``every`` s of work, taking ``cost``
    s. The job queues again at ``t`` (behind the jobs waiting, before this instant's
    arrivals) with the work its checkpoints did not save, and the walltime it was killed at
    (a requeued Slurm job keeps its time limit): ``run[j]`` becomes what the rest takes with
    its own checkpoints. Without a checkpoint the kill stands, as without checkpointing.
    """
    ckpt, work, start, end, ist = jobs.ckpt, jobs.work, s.start, s.end, s.ist
    saved = checkpoint_saved(end[j] - start[j], ckpt[0], ckpt[1])
    if not saved > 0.0:
        return False
    work[j] -= saved
    jobs.run[j] = checkpointed_wall(work[j], ckpt[0], ckpt[1])
    if out.restarts[j] == 0:
        out.first[j] = start[j]
    out.restarts[j] += 1
    s.killed[j] = 0
    start[j] = -1.0
    end[j] = -1.0
    s.queued[j] = t
    s.queue[ist[S_QN]] = j
    ist[S_QN] += 1
    return True


@njit(cache=True, _nrt=False)
def _end(j, t, jobs, s, out):
    """Job ``j`` ends at ``t``: free its resources; record its completion, or requeue it
    (:func:`_requeue`) if it was killed after a checkpoint."""
    ist, running, pos = s.ist, s.running, s.pos
    ist[S_FREE] += jobs.size[j]
    r = pos[j]
    last = running[ist[S_RN] - 1]
    running[r] = last
    pos[last] = r
    ist[S_RN] -= 1
    out.ran[j] += s.end[j] - s.start[j]
    out.waited[j] += s.start[j] - s.queued[j]
    if s.killed[j] and jobs.ckpt[0] > 0.0 and _requeue(j, t, jobs, s, out):
        return  # not a completion: the job waits again
    u = jobs.user[j]
    out.ulast2[u] = out.ulast1[u]
    out.ulast1[u] = out.ran[j]
    out.ucount[u] += 1
    out.fin[j] = 1
    k = ist[S_DONE]
    out.done_order[k] = j
    out.done_start[k] = s.start[j]
    out.done_end[k] = s.end[j]
    out.done_user[k] = u
    ist[S_DONE] += 1


@njit(cache=True)
def run_kernel(jobs, pol, s, out, pfn, cfn, ctx):
    """Advance the simulation; return True when every job has ended.

    ``jobs``, ``pol``, ``s``, ``out`` are the records :class:`Jobs`, :class:`Policy`,
    :class:`Sched` and :class:`Done`; ``s.ist``/``s.fst`` hold the integer and float scalars
    (see the ``S_*`` slots) so the state survives between calls. With ``pol.stop_after > 0``
    the call returns (False) after the scheduling pass in which the ``stop_after``-th
    completion of this call happened. With ``pred_mode == PRED_ASK`` it also returns (False)
    at the arrival of a job whose prediction was not made on the jobs completed so far
    (``pver[j]``, the completions it saw, differs from the count now). ``done_order``
    receives the jobs in the order they completed, ``done_start``, ``done_end`` and
    ``done_user`` their start, end and user in that order. With ``pred_mode == PRED_CALL``
    the compiled plug-in ``pfn`` (and ``cfn`` with ``PRED_CALL_CORRECT``, ``ctx`` the table
    of arrays they read) predicts each arriving job (:func:`_call_plugin`); the call returns
    (False) with ``ist[S_STATUS]`` set if it cannot go on. With ``ckpt[0] > 0`` jobs
    checkpoint and a killed job is requeued (:func:`_requeue`); ``ran`` and ``waited`` sum
    each job's segments (seconds run, seconds queued).
    """
    submit, ist, fst, ht, hk, hj = jobs.submit, s.ist, s.fst, s.ht, s.hk, s.hj
    pred_mode, stop_after = pol.pred_mode, pol.stop_after
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
                _end(j, t, jobs, s, out)
            else:
                _fire_due(j, t, jobs, pol, s)
        while na < n and submit[na] == t:
            if pred_mode == PRED_ASK and out.pver[na] != ist[S_DONE]:
                # The prediction of job ``na`` (if any) was made before the latest completion:
                # return for one made on the jobs completed so far (this instant's ends are
                # in; the arrivals and the scheduling pass of ``t`` resume on the next call).
                # ``fst[1]``: until when the jobs completed stay these (the caller may predict
                # every arrival before that at once).
                ist[S_NEXT] = na
                fst[1] = _quiet_until(t, jobs, pol, s)
                return False
            if pfn is not None and pred_mode >= PRED_CALL:  # pruned when compiled without
                status = _call_plugin(na, ist[S_DONE], jobs, pol, pfn, cfn, ctx, fst)
                if status != 0:
                    ist[S_NEXT] = na
                    ist[S_STATUS] = status
                    return False
            if pred_mode == PRED_AVE2:
                u = jobs.user[na]
                p = jobs.req[na]
                if out.ucount[u] >= 2:
                    p = 0.5 * (out.ulast1[u] + out.ulast2[u])
                p = clamp_prediction(p, jobs.req[na])
            elif pred_mode >= PRED_CALL:
                p = fst[1]
            else:
                p = pol.pred0[na]
            s.wtr[na] = p
            s.wtr0[na] = p
            s.queue[ist[S_QN]] = na
            ist[S_QN] += 1
            na += 1
        ist[S_NEXT] = na
        _schedule(t, jobs, pol, s)
        if stop_after > 0 and ist[S_DONE] - done_at_call >= stop_after:
            return False


#: Which record (:class:`KernelState` attribute) holds each array of the state.
_RECORD_OF = {
    name: record
    for record, fields in (("jobs", Jobs._fields), ("sched", Sched._fields), ("out", Done._fields))
    for name in fields
}


class KernelState:
    """The arrays of one simulation, allocated once and advanced by :func:`run_kernel`.

    They live in three records, :attr:`jobs` (:class:`Jobs`), :attr:`sched` (:class:`Sched`)
    and :attr:`out` (:class:`Done`); each array is also an attribute of its own name
    (``state.start`` is ``state.sched.start``), and assigning one replaces it in its record.

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

    jobs: Jobs
    sched: Sched
    out: Done

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
        self.jobs = make_jobs(submit, run, size, limit, req, user)
        submit = self.jobs.submit
        n = len(submit)
        n_users = int(self.jobs.user.max()) + 1 if n else 1
        ist = np.zeros(7, dtype=np.int64)
        ist[S_FREE] = capacity
        self.sched = Sched(
            ist=ist,
            fst=np.zeros(2),
            queue=np.zeros(n, dtype=np.int64),
            running=np.zeros(n, dtype=np.int64),
            pos=np.zeros(n, dtype=np.int64),
            ht=np.zeros(2 * n + 2),
            hk=np.zeros(2 * n + 2, dtype=np.int64),
            hj=np.zeros(2 * n + 2, dtype=np.int64),
            start=np.full(n, -1.0),
            end=np.full(n, -1.0),
            wtr=np.zeros(n),
            wtr0=np.zeros(n),
            ncorr=np.zeros(n, dtype=np.int64),
            noop=np.zeros(n, dtype=np.int64),
            killed=np.zeros(n, dtype=np.int8),
            queued=submit.copy(),
        )
        self.out = Done(
            fin=np.zeros(n, dtype=np.int8),
            done_order=np.zeros(n, dtype=np.int64),
            done_start=np.zeros(n),
            done_end=np.zeros(n),
            done_user=np.zeros(n, dtype=np.int64),
            pver=np.full(n, -1, dtype=np.int64),
            ulast1=np.zeros(n_users),
            ulast2=np.zeros(n_users),
            ucount=np.zeros(n_users, dtype=np.int64),
            ran=np.zeros(n),
            waited=np.zeros(n),
            first=np.full(n, -1.0),
            restarts=np.zeros(n, dtype=np.int64),
        )

    def __getattr__(self, name: str) -> np.ndarray:
        # Only called for names not found the usual way: the records' arrays.
        record = _RECORD_OF.get(name)
        if record is None or record not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self.__dict__[record], name)

    def __setattr__(self, name: str, value: object) -> None:
        record = _RECORD_OF.get(name)
        if record is None:
            object.__setattr__(self, name, value)
        else:
            object.__setattr__(self, record, getattr(self, record)._replace(**{name: value}))

    def checkpointing(self, every: float, cost: float) -> None:
        """Make every job checkpoint after each ``every`` s of work, at ``cost`` s each, and
        a killed job resume from its last checkpoint (:func:`_requeue`); call before
        :meth:`advance`. A job then runs its work plus its checkpoints
        (:func:`grapeshot.jobs.rules.checkpointed_wall`)."""
        self.jobs.ckpt[:] = (every, cost)
        # Own copies: the kernel rewrites both at each requeue, and ``run`` may be the
        # caller's array (ascontiguousarray does not copy).
        work = self.jobs.run.copy()
        run = np.empty_like(work)
        _with_checkpoints(work, every, cost, run)
        self.jobs = self.jobs._replace(work=work, run=run)

    def first_start(self) -> np.ndarray:
        """When each job first started, seconds (its last segment's start unless requeued)."""
        return np.where(self.out.restarts > 0, self.out.first, self.sched.start)

    @property
    def next_arrival(self) -> int:
        """Index of the first job not yet submitted."""
        return int(self.sched.ist[S_NEXT])

    def finished_jobs(self) -> np.ndarray:
        """Indices of the jobs that have ended, in index order."""
        return np.flatnonzero(self.out.fin)

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
        """The arguments of :func:`run_kernel` for :meth:`advance`: the three records and a
        :class:`Policy` of these parameters; a caller that resumes the kernel once per job (a
        plug-in policy) builds them once and calls ``run_kernel``. ``plugin`` = ``(pfn, cfn,
        ctx)``: a compiled plug-in (``PRED_CALL*`` modes); without it the kernel is compiled
        with ``None`` there (calling through C callbacks' types costs ~45 µs per call of the
        kernel, which a Python plug-in makes once per few jobs)."""
        cptr, cwall = chains if chains is not None else (_NO_CHAIN, _NO_WALLS)
        policy = Policy(
            pred0=np.ascontiguousarray(pred0, dtype=np.float64),
            incr=np.ascontiguousarray(incr, dtype=np.float64),
            cptr=cptr,
            cwall=cwall,
            lead=float(lead),
            pred_mode=int(pred_mode),
            backfill=int(backfill),
            stop_after=int(stop_after),
        )
        pfn, cfn, ctx = plugin if plugin is not None else (None, None, None)
        return (self.jobs, policy, self.sched, self.out, pfn, cfn, ctx)


@njit(cache=True)
def _with_checkpoints(work, every, cost, out):
    for j in range(len(work)):
        out[j] = checkpointed_wall(work[j], every, cost)


_NO_CHAIN = np.zeros(0, dtype=np.int64)
_NO_WALLS = np.zeros(0)
