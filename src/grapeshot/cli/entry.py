"""The ``grapeshot`` console script: quiet on Ctrl-C while the command line starts.

Importing the command line (typer, rich) takes a few tenths of a second; a Ctrl-C in that
window would print a ``KeyboardInterrupt`` traceback. Until :func:`grapeshot.cli.main.main`
runs, an interrupt ends the process with one line and status 130; from then on the command
line handles it (each command, and the MPI runtime's lifeline, have their own handling).
"""

from __future__ import annotations

import os
import signal
import sys


def _quiet_exit(signum: int, frame: object) -> None:
    sys.stderr.write("grapeshot: interrupted\n")
    os._exit(130)  # nothing has been written yet: no file can be left half done


def main() -> None:
    """Install the start-up handler, import the command line, restore, run."""
    previous = signal.signal(signal.SIGINT, _quiet_exit)
    from grapeshot.cli.main import main as run_command_line

    signal.signal(signal.SIGINT, previous)
    run_command_line()
