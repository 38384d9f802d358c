"""How every command speaks: a rich view for people, ``--json`` for scripts, one-line errors."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def _default(obj: Any) -> Any:
    import numpy as np  # only reached for numpy values, so numpy is loaded already

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def emit_json(payload: dict[str, Any]) -> None:
    """Print ``payload`` as one JSON document on standard output."""
    sys.stdout.write(json.dumps(payload, default=_default) + "\n")
    sys.stdout.flush()


def warn(command: str, message: str) -> None:
    """One line on standard error: ``grapeshot COMMAND: warning: MESSAGE`` (also under --json)."""
    sys.stderr.write(f"grapeshot {command}: warning: {message}\n")
    sys.stderr.flush()
