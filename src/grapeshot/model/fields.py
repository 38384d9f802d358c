"""Gathering a program's output fields over all partitions, and their digest.

Grid fields (shaped like the partition's box) are placed into one array over the whole
domain. Particle attributes (named in ``particle_fields``, or any array not shaped like its
box) are concatenated over partitions and, when an ``"id"`` entry is present, sorted by it, so
the result does not depend on which partition held which particle.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from grapeshot.model.program import Box


def assemble_fields(
    boxes: Sequence[Box],
    outputs: Sequence[dict[str, np.ndarray]],
    particle_fields: Sequence[str] = (),
) -> dict[str, np.ndarray]:
    """Global fields from per-partition outputs (both in partition-id order)."""
    if not boxes:
        return {}
    domain = boxes[0].domain_shape
    names = list(outputs[0])
    result: dict[str, np.ndarray] = {}
    particle_names = []
    for name in names:
        first = outputs[0][name]
        if (
            name not in particle_fields
            and name != "id"
            and first.shape[: len(domain)] == (boxes[0].shape)
        ):
            whole = np.empty(domain + first.shape[len(domain) :], dtype=first.dtype)
            for box, out in zip(boxes, outputs, strict=True):
                whole[tuple(slice(lo, hi) for lo, hi in zip(box.lo, box.hi, strict=True))] = out[
                    name
                ]
            result[name] = whole
        else:
            particle_names.append(name)
    if particle_names:
        parts = {n: np.concatenate([out[n] for out in outputs]) for n in particle_names}
        if "id" in parts:
            order = np.argsort(parts["id"], kind="stable")
            parts = {n: a[order] for n, a in parts.items()}
        result.update(parts)
    return result


def fields_digest(fields: dict[str, np.ndarray]) -> str:
    """SHA-256 over the fields' names, dtypes, shapes and bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(fields):
        a = np.ascontiguousarray(fields[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()
