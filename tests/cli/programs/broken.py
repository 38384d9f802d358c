"""A user program that breaks in set-up in the ways users' programs do (tests of one line,
no hang): ``make(parts, cells, seed, how)`` with ``how`` one of the factories below."""

from __future__ import annotations

import os

import numpy as np
from numba import njit

from grapeshot.model.program import Exchange, Phase, Program


@njit(nogil=True)
def smooth(u, out, box, params):
    g = box.ghost
    for i in range(g, g + box.shape[0]):
        for j in range(g, g + box.shape[1]):
            out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


class Broken(Program):
    name = "broken"

    def __init__(self, parts, cells, how: str) -> None:
        self.parts_shape = tuple(parts)
        self.domain_shape = tuple(cells or (32, 32))
        self.how = how
        fields = ("u", "outt") if how == "typo" else ("u", "out")
        self.phases = (Phase("smooth", smooth, fields=fields, exchange=Exchange(("u",))),)

    def init_block(self, box):
        if self.how == "one" and box.part == 1:
            raise ValueError("no data for piece 1")
        if self.how == "all":
            raise OSError("data file missing")
        u = np.ones(box.padded_shape)
        return {"u": u, "out": np.zeros_like(u)}

    def output_fields(self, block, box):
        return {"out": block["out"][box.interior()].copy()}


def typo(parts, cells=None, seed=0):
    return Broken(parts, cells, "typo")


def one(parts, cells=None, seed=0):
    return Broken(parts, cells, "one")


def all_fail(parts, cells=None, seed=0):
    return Broken(parts, cells, "all")


def factory_on_rank_one(parts, cells=None, seed=0):
    if os.environ.get("PMI_RANK") == "1":
        raise RuntimeError("this rank cannot read its configuration")
    return Broken(parts, cells, "fine")
