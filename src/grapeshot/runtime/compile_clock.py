"""numba compilations that happen while a rank's steps run, and the seconds they take.

The executor compiles (or loads) everything a step calls before its clock starts
(:meth:`~grapeshot.runtime.executor.RankRunner.warm`), but a kernel meeting argument types
it was not warmed with compiles inside the run: seconds on the thread that calls it, with
the others waiting (numba compiles under one lock), all counted in the wall time. A batch run
on threads was compiled once more that way for every install or edit (its runs were strided
views, not the contiguous arrays it was warmed with): 8.9-9.1 s against 1.1 s
(docs/runtime.md, threads). :class:`CompileClock` counts what is left, so that a run can
say its wall includes compiling instead of passing it off as idle time.
"""

from __future__ import annotations

import threading
import time

from numba.core.event import Listener


class CompileClock(Listener):
    """A numba ``"numba:compile"`` listener: outermost compilations and their seconds.

    Install it with ``numba.core.event.install_listener("numba:compile", clock)``. A
    function that compiles its callees nests their events inside its own on the same thread:
    only the outermost one is counted and timed. Loading a function from numba's cache is not
    a compilation and is not counted.

    Attributes
    ----------
    seconds
        Their wall seconds, summed.
    names
        The compiled functions' qualified names, one per outermost compilation, in order.
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        self.names: list[str] = []
        self._open: dict[int, tuple[int, float]] = {}  # thread: (depth, start)

    def take(self) -> tuple[float, list[str]]:
        """What was compiled since the last take, ``(seconds, names)``; counting starts
        afresh (a run's segments each report their own)."""
        seconds, names = self.seconds, self.names
        self.seconds, self.names = 0.0, []
        return seconds, names

    def on_start(self, event) -> None:
        depth, start = self._open.get(threading.get_ident(), (0, 0.0))
        if depth == 0:
            start = time.perf_counter()
            dispatcher = (event.data or {}).get("dispatcher")
            name = getattr(getattr(dispatcher, "py_func", None), "__qualname__", "?")
            self.names.append(name)
        self._open[threading.get_ident()] = (depth + 1, start)

    def on_end(self, event) -> None:
        depth, start = self._open.get(threading.get_ident(), (1, time.perf_counter()))
        if depth == 1:
            self._open.pop(threading.get_ident(), None)
            self.seconds += time.perf_counter() - start
        else:
            self._open[threading.get_ident()] = (depth - 1, start)
