"""Run the ``grapeshot`` command line in-process, through its real entry point.

Every test of a command's exit status and messages goes through
:func:`grapeshot.cli.main.main`, the function the ``grapeshot`` script calls, so the status is
the one a user's shell sees (errors become one line on stderr and status 2 there, not in the
test).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pytest

from grapeshot.cli.main import main

#: How ``grapeshot`` prefixes an error message on stderr.
ERROR_PREFIX = "grapeshot: error: "


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    @property
    def error(self) -> str:
        """The error message ``grapeshot`` printed (its last ``grapeshot: error:`` line)."""
        lines = [x for x in self.err.splitlines() if x.startswith(ERROR_PREFIX)]
        assert lines, f"no error line on stderr: {self.err!r}"
        return lines[-1][len(ERROR_PREFIX) :]


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    """Run ``grapeshot ARGS``; returns the exit code and captured stdout/stderr."""
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = _exit_code(exc)
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def run_main(*args: str, columns: int = 120) -> Result:
    """Run ``grapeshot ARGS`` without a fixture: stdout and stderr go to strings.

    ``columns`` fixes the terminal width the help formatter sees. Anything but
    :class:`SystemExit` propagates: a crash is not an exit status.
    """
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with (
        mock.patch.dict(os.environ, {"COLUMNS": str(columns)}),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            main(list(args))
        except SystemExit as exc:
            code = _exit_code(exc)
    return Result(code, out.getvalue(), err.getvalue())
