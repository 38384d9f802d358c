"""Plain-Python RS_N, the slow reference the numba kernel is checked (and benchmarked) against.

Same algorithm and the same random draws as :func:`grapeshot.exchange.schedules.schedule_rsn`
(one sender order and one scan start per phase, rows reused cyclically), written the way a
competent user would without numba: lists of remaining destinations, a set of busy receivers.
"""

from __future__ import annotations

import numpy as np

from grapeshot.exchange.schedules import random_orders
from grapeshot.model.seed import SeedLike, as_generator


def rsn_reference(
    com: np.ndarray, seed: SeedLike, *, priority: bool = True
) -> list[list[tuple[int, int]]]:
    """RS_N phases as lists of ``(src, dst)``, each phase sorted by sender."""
    rng = as_generator(seed)
    n = com.shape[0]
    todo = [list(np.flatnonzero(com[i]).tolist()) for i in range(n)]
    d = max((len(t) for t in todo), default=0)
    rows = d + int(np.ceil(np.log2(max(d, 2)))) + 8
    orders = random_orders(rng, rows, n)
    start_keys = rng.integers(0, 2**62, size=(rows, n), dtype=np.int64)
    phases: list[list[tuple[int, int]]] = []
    while any(todo):
        row = len(phases) % rows
        busy: set[int] = set()
        picked: dict[int, int] = {}
        order = orders[row].tolist()
        if priority:  # most messages left first; Python's sort is stable
            order.sort(key=lambda i: -len(todo[i]))
        for i in order:
            di = len(todo[i])
            if di == 0:
                continue
            s0 = int(start_keys[row, i]) % di
            for q in range(di):
                s = (s0 + q) % di
                if todo[i][s] not in busy:
                    picked[i] = s
                    busy.add(todo[i][s])
                    break
        phase = []
        for i in sorted(picked):
            s = picked[i]
            phase.append((i, todo[i][s]))
            # Same removal as the kernel: the last entry moves into the freed slot.
            todo[i][s] = todo[i][-1]
            todo[i].pop()
        phases.append(phase)
    return phases
