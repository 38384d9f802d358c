"""Standard JSON from grapeshot's documents: every ``--json`` line and every JSON file written.

Python's :func:`json.dumps` writes a NaN or an infinity as the bare tokens ``NaN`` and
``Infinity``, which RFC 8259 does not have: ``jq``, browsers (a Chrome trace opened in
Perfetto), JavaScript's ``JSON.parse`` and most other parsers refuse the whole document. A
simulation that blew up, a ratio over zero or an empty window's mean are real results, so
grapeshot writes them as ``null`` ("no finite value"), and numpy's scalars and arrays as
numbers and lists.
"""

from __future__ import annotations

import json
import math
from typing import Any


def _plain(obj: Any) -> Any:
    """``json.dumps``'s ``default``: numpy scalars and arrays as Python numbers and lists."""
    import numpy as np  # only reached for numpy values, so numpy is loaded already

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"cannot write a value of type {type(obj).__name__} as JSON")


def _finite(obj: Any) -> Any:
    """``obj`` with every non-finite float (also inside numpy values) replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    return _finite(_plain(obj))


def json_text(doc: Any, **kwargs: Any) -> str:
    """``doc`` as one standard JSON text: non-finite floats as ``null``, numpy values as numbers.

    ``kwargs`` go to :func:`json.dumps` (``indent``, ``separators``). The document is walked
    only when it holds a non-finite float, so a large timeline or trace costs one
    ``json.dumps`` as before.
    """
    try:
        return json.dumps(doc, default=_plain, allow_nan=False, **kwargs)
    except ValueError:
        return json.dumps(_finite(doc), allow_nan=False, **kwargs)
