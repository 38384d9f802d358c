"""Run the ``grapeshot`` command line in-process and capture what it prints."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from grapeshot.cli.main import main


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    """Run ``grapeshot ARGS``; returns the exit code and captured stdout/stderr."""
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)
