"""Every rank ends promptly on Ctrl-C, on SIGTERM or SIGHUP, or when its launcher dies.

Under ``mpiexec`` a rank blocked inside an MPI call (a broadcast at start-up, a wait for a halo)
never returns to Python, so Python's own ``KeyboardInterrupt`` is never raised there: the rank
spins at 100 % CPU until killed by hand. :func:`lifeline` does not rely on the main thread. The
C-level signal handler writes the signal's number to a socket (``signal.set_wakeup_fd``); a
daemon thread waits on that socket (mpi4py releases the GIL inside MPI calls) and ends the
process with ``os._exit`` at once. While MPI_Init runs (inside ``import mpi4py.MPI``, holding
the GIL) not even that thread can run, so :meth:`Guard.uncaught` leaves the signals to the
kernel's default action for that span.

A lost launcher sends no signal. A small watchdog process (:func:`watchdog`, started with the
block) checks every ``poll`` seconds that the rank's parent (the launcher's proxy) is still
the one it started with; when it is gone the rank is an orphan nobody will wait for, stuck in
an MPI call for ever, and the watchdog kills it. Being another process, it needs nothing from
the rank, not even its GIL: it also keeps the start's deadline while MPI_Init runs (a rank
whose peer died before starting MPI waits there for ever, the GIL held, where the rank's own
deadline thread cannot run).

Rank 0 prints one line saying why; the other ranks end silently. The exit status is
``128 + signal`` for a signal (130 for Ctrl-C) and 1 for a lost launcher.

While the steps run, ending at once would leave MPI's shared-memory segments behind and lose
the run: :meth:`Guard.deferred` turns the first SIGINT/SIGTERM/SIGHUP into a note
(:attr:`Guard.pending`) that the runtime reads at its next step boundary, where the ranks agree
to stop together (:mod:`grapeshot.runtime.checkpoint`). A second signal still ends the
process at once.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

#: The signals that end a run, and how the line on rank 0 names them.
SIGNALS: dict[int, str] = {
    signal.SIGINT: "interrupted (Ctrl-C)",
    signal.SIGTERM: "terminated (SIGTERM)",
    signal.SIGHUP: "hung up (SIGHUP)",
}
#: Environment variables in which MPI launchers give a process its rank before MPI starts.
_RANK_VARIABLES = ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID")
#: Byte written to the socket to stop the watcher (no signal has number 0).
_STOP = b"\0"


def launcher_rank() -> int:
    """This process's rank as the launcher set it in the environment (0 without one)."""
    for name in _RANK_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


#: Held by the first thread ending the process (the signal handler and the watcher may race).
_ENDING = threading.Lock()


def _say(why: str, rank: int) -> None:
    """Rank 0's one line saying why every rank stops."""
    if rank == 0:
        with contextlib.suppress(OSError):
            os.write(2, f"grapeshot: error: {why}; every rank stops\n".encode())


def _end(code: int, why: str, rank: int) -> None:
    if not _ENDING.acquire(blocking=False):
        threading.Event().wait()  # the other one is ending the process
    _say(why, rank)
    os._exit(code)


class _Deferral:
    """Whether signals are deferred now, and the first one that came meanwhile."""

    def __init__(self) -> None:
        self.on = False
        self.pending = 0

    def take(self, signum: int, rank: int) -> None:
        """One signal, seen once (by the watcher thread): noted while deferred, the first
        time; otherwise the process ends."""
        if self.on and not self.pending:
            self.pending = signum
            return
        _end(128 + signum, SIGNALS[signum], rank)


def _watch(
    sock: socket.socket, stop: threading.Event, rank: int, deferral: _Deferral | None = None
) -> None:
    deferral = deferral or _Deferral()
    while not stop.is_set():
        select.select([sock], [], [])
        try:
            data = sock.recv(64)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            return
        for signum in data:
            if signum in SIGNALS:
                deferral.take(signum, rank)


def _parent_of(pid: int) -> int | None:
    """The parent of ``pid`` (Linux ``/proc``), or ``None`` once it has ended."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[1])


def watchdog(pid: int, parent: int, rank: int, poll: float) -> None:
    """Kill ``pid`` once its parent is no longer ``parent``, or once a deadline it was given
    has passed; return when ``pid`` has ended.

    Runs in a process of its own (``python -m grapeshot.runtime.lifeline``), started by
    :func:`lifeline`; rank 0's watchdog prints the one line. Its stdin carries orders from
    the rank, a line each: ``D <time.monotonic() it ends> <the line>`` sets a deadline
    (``time.monotonic()`` is one clock for every process), ``C`` clears it.
    """
    orders: Any = sys.stdin.buffer
    due: tuple[float, str] | None = None
    pending = b""
    while True:
        now = _parent_of(pid)
        if now is None:
            return
        if now != parent:
            _kill(pid, rank, "the launcher (mpiexec) is gone")
            return
        if due is not None and time.monotonic() > due[0]:
            _kill(pid, rank, due[1])
            return
        if orders is None:
            time.sleep(poll)
            continue
        ready, _, _ = select.select([orders], [], [], poll)
        if ready:
            chunk = os.read(orders.fileno(), 4096)
            if not chunk:  # the rank closed its end (or ended): only the parent is watched
                orders = None
                continue
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                words = line.decode("utf-8", "replace").split(" ", 2)
                if words[0] == "D" and len(words) == 3:
                    due = (float(words[1]), words[2])
                elif words[0] == "C":
                    due = None


def _kill(pid: int, rank: int, why: str) -> None:
    _say(why, rank)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _start_watchdog(rank: int, poll: float) -> subprocess.Popen[bytes] | None:
    if not os.path.exists(f"/proc/{os.getpid()}/stat"):
        return None  # no /proc: no orphan detection
    args = [str(os.getpid()), str(os.getppid()), str(rank), str(poll)]
    return subprocess.Popen(
        [sys.executable, "-m", "grapeshot.runtime.lifeline", *args],
        stdin=subprocess.PIPE,  # the deadlines it keeps while MPI_Init holds the GIL
        start_new_session=True,  # a Ctrl-C for the run is not for the watchdog
    )


class Guard:
    """What :func:`lifeline` yields: the handlers it installed, to step aside briefly."""

    def __init__(
        self,
        handler: object,
        rank: int = 0,
        deferral: _Deferral | None = None,
        dog: subprocess.Popen[bytes] | None = None,
    ) -> None:
        self._handler = handler
        self._rank = rank
        self._deferral = deferral
        self._dog = dog
        #: The running :meth:`deadline`'s ``(time.monotonic() it ends, the line it ends with)``.
        self._due: tuple[float, str] | None = None

    def _tell(self, order: str) -> None:
        """Send the watchdog one order line (nothing if there is none, or it ended)."""
        if self._dog is not None and self._dog.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                self._dog.stdin.write(order.encode() + b"\n")
                self._dog.stdin.flush()

    @property
    def pending(self) -> int:
        """The signal that came while :meth:`deferred` (its number), or 0."""
        return 0 if self._deferral is None else self._deferral.pending

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Within this block the first signal only sets :attr:`pending`; a second ends the
        process as outside it. Off the main thread (no handlers) signals keep their default."""
        if self._deferral is None:
            yield
            return
        self._deferral.on = True
        try:
            yield
        finally:
            self._deferral.on = False

    @contextlib.contextmanager
    def deadline(self, seconds: float, what: str) -> Iterator[None]:
        """End the process (status 1, one line on rank 0) if the block outlasts ``seconds``.

        For the start of a run, before the executor's own ``--timeout`` watch begins: a rank
        waiting in a broadcast for a rank that never comes (the GIL is released there) ends
        instead of waiting for ever. Where C code holds the GIL (``MPI_Init``, within
        :meth:`uncaught`) the watchdog process keeps the deadline.
        """
        done = threading.Event()
        why = f"no progress for {seconds:g} s {what} (--timeout)"
        self._due = (time.monotonic() + seconds, why)

        def expire() -> None:
            if not done.wait(seconds):
                _end(1, why, self._rank)

        timer = threading.Thread(target=expire, name="grapeshot-deadline", daemon=True)
        timer.start()
        try:
            yield
        finally:
            self._due = None
            done.set()
            timer.join()

    @contextlib.contextmanager
    def uncaught(self) -> Iterator[None]:
        """Within this block the signals end the process by the kernel's default action.

        For C code that holds the GIL for long (``MPI_Init``): neither the Python handler nor
        the watcher thread can run then, but the default action needs neither; the running
        :meth:`deadline`, if any, is the watchdog process's to keep meanwhile.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        for s in SIGNALS:
            signal.signal(s, signal.SIG_DFL)
        if self._due is not None:
            at, why = self._due
            self._tell(f"D {at!r} {why}")
        try:
            yield
        finally:
            if self._due is not None:
                self._tell("C")
            for s in SIGNALS:
                signal.signal(s, self._handler)  # type: ignore[arg-type]


@contextlib.contextmanager
def lifeline(*, rank: int | None = None, poll: float = 0.25) -> Iterator[Guard]:
    """Within the block, end this process at once on SIGINT/SIGTERM/SIGHUP or an orphaning.

    Parameters
    ----------
    rank
        The MPI rank (rank 0 prints the reason); default: :func:`launcher_rank`, so the
        block may start before MPI is initialised.
    poll
        Seconds between the watchdog's checks that the parent process is still alive.

    Off the main thread (where signal handlers cannot be set) the block runs unguarded. On
    exit the previous handlers and wakeup descriptor are restored: a process that calls
    the command line several times (tests) keeps its own handling.
    """
    who = launcher_rank() if rank is None else rank
    if threading.current_thread() is not threading.main_thread():
        yield Guard(signal.SIG_DFL, who)
        return
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)

    deferral = _Deferral()

    def on_signal(signum: int, frame: object) -> None:
        # The watcher thread sees every signal too (through the wakeup socket): while
        # deferred, it alone counts them, so one signal is not taken for two.
        if not deferral.on:
            _end(128 + signum, SIGNALS[signum], who)

    previous = {s: signal.signal(s, on_signal) for s in SIGNALS}
    stop = threading.Event()
    watcher = threading.Thread(
        target=_watch, args=(reader, stop, who, deferral), name="grapeshot-lifeline", daemon=True
    )
    watcher.start()
    dog = _start_watchdog(who, poll)
    try:
        yield Guard(on_signal, who, deferral, dog)
    finally:
        if dog is not None:
            dog.kill()
            dog.wait()
            if dog.stdin is not None:
                dog.stdin.close()
        stop.set()
        with contextlib.suppress(OSError):
            writer.send(_STOP)
        watcher.join()
        signal.set_wakeup_fd(previous_fd)
        for s, handler in previous.items():
            signal.signal(s, handler)
        reader.close()
        writer.close()


if __name__ == "__main__":
    watchdog(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
