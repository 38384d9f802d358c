"""The compiled loop behind :func:`grapeshot.model.workload.grid_halo` on grids without wrap.

Apart from the workload module so that commands which only read workloads (``trace import
--help``) do not load numba.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True)
def grid_rows(shape3, e0, e1, e2, ndim, ghost, cell_bytes, corners, indptr, indices, nbytes, fill):
    """Count (``fill=False``: ``indptr``) or write (``indices``, ``nbytes``) each partition's
    halo messages: to every neighbour at an offset in ``{-1, 0, 1}^ndim`` (faces only without
    ``corners``), ``ghost`` layers of the shared face, edge or corner, in cells of the sender."""
    nx, ny, nz = shape3[0], shape3[1], shape3[2]
    k = 0
    for i in range(nx):
        for j in range(ny):
            for m in range(nz):
                p = (i * ny + j) * nz + m
                indptr[p] = k
                for dx in range(-1, 2):
                    for dy in range(-1, 2):
                        for dz in range(-1, 2):
                            if ndim == 2 and dz != 0:
                                continue
                            nonzero = (dx != 0) + (dy != 0) + (dz != 0)
                            if nonzero == 0 or (not corners and nonzero > 1):
                                continue
                            a, b, c = i + dx, j + dy, m + dz
                            if a < 0 or a >= nx or b < 0 or b >= ny or c < 0 or c >= nz:
                                continue
                            if fill:
                                cells = min(ghost, e0[i]) if dx != 0 else e0[i]
                                cells *= min(ghost, e1[j]) if dy != 0 else e1[j]
                                if ndim == 3:
                                    cells *= min(ghost, e2[m]) if dz != 0 else e2[m]
                                indices[k] = (a * ny + b) * nz + c
                                nbytes[k] = cells * cell_bytes
                            k += 1
    indptr[nx * ny * nz] = k
