"""One way in for a workload: a file or a synthetic SPEC, wherever either is accepted."""

from __future__ import annotations

from pathlib import Path

from grapeshot.model.errors import InputError
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.model.workload import Workload
from grapeshot.model.workload_file import load_workload


def open_workload(path: str | Path | None = None, synthetic: str | None = None) -> Workload:
    """Load the workload file ``path`` or build the synthetic ``SPEC``; exactly one is given."""
    if (path is None) == (synthetic is None):
        raise InputError("--trace/--synthetic", "need exactly one of them", "a file or a SPEC")
    if path is not None:
        return load_workload(path)
    return synthetic_workload(synthetic)
