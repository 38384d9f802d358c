"""A charm4py program that runs one Charm++ load balancer on given per-object loads.

Started by ``grapeshot charm-compare`` as ``python -m charmrun.start +pN charm_job.py IN OUT
+balancer NAME +LBDebug 1 +LBObjOnly``. ``IN`` is an ``.npz`` with ``loads`` (seconds of
busy work per object) and ``home`` (the PE each object starts on). Every object is a chare
of a 1-D array placed on its home PE (an ``ArrayMap``); it busy-waits its load once, times
that entry method itself (wall clock, what Charm++'s instrumentation measures too), and
calls ``AtSync``; Charm++'s balancer then moves the chares; after the resume each reports
``(index, start PE, final PE, measured seconds)``. ``OUT`` receives them as JSON. Charm++
cannot be given loads directly: it measures them, so the comparison uses the measured ones
on both sides.

This module only runs under charmrun (it imports charm4py at module level).
"""

from __future__ import annotations

import json
import time

import numpy as np
from charm4py import Array, ArrayMap, Chare, Future, Group, Reducer, charm


class HomeMap(ArrayMap):
    """Place object ``i`` on ``home[i]``."""

    def __init__(self, home):
        self.home = home

    def procNum(self, index):
        return int(self.home[index[0]])


class Work(Chare):
    """One object: busy-waits its load, then lets the balancer move it."""

    def __init__(self, loads, done):
        self.load = float(loads[self.thisIndex[0]])
        self.done = done
        self.start_pe = charm.myPe()
        self.measured = 0.0

    def work(self):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < self.load:
            pass
        self.measured = time.perf_counter() - t0
        self.AtSync()

    def resumeFromSync(self):
        row = (self.thisIndex[0], self.start_pe, charm.myPe(), self.measured)
        self.contribute(row, Reducer.gather, self.done)


def main(args):
    src, out = args[1], args[2]
    data = np.load(src)
    loads = data["loads"].tolist()
    home = data["home"].astype(int).tolist()
    done = Future()
    placement = Group(HomeMap, args=[home])
    objects = Array(Work, len(loads), args=[loads, done], useAtSync=True, map=placement)
    for i in range(len(loads)):
        objects[i].work()
    rows = sorted(done.get())
    with open(out, "w") as f:
        json.dump({"pes": charm.numPes(), "rows": rows}, f)
    charm.exit()


if __name__ == "__main__":
    charm.start(main)
