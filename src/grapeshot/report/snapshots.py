"""PNG snapshots of a grid field, so a person can see the water move."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from grapeshot.report.figures import plt, save_figure


def snapshot(
    path: str | Path,
    field: np.ndarray,
    *,
    spacing: Sequence[float],
    bounds: Sequence[np.ndarray],
    title: str,
    label: str,
    limits: tuple[float, float],
    cmap: str = "viridis",
) -> Path:
    """A PNG of one grid field (a 3-D field shows its middle slice along z).

    Parameters
    ----------
    field
        ``(nx, ny)`` or ``(nx, ny, nz)``; non-finite values are left blank.
    spacing
        Cell size per axis, m.
    bounds
        Partition bounds per axis (cells), drawn as thin lines.
    limits
        Colour scale (the same for every frame, so motion shows as motion).
    cmap
        Matplotlib colour map.
    """

    if field.ndim == 3:
        field = field[:, :, field.shape[2] // 2]
    values = np.where(np.isfinite(field), field, np.nan).astype(np.float64)
    lx, ly = field.shape[0] * spacing[0], field.shape[1] * spacing[1]
    fig, ax = plt.subplots(figsize=(7.0, max(2.5, 7.0 * ly / lx)), constrained_layout=True)
    image = ax.imshow(
        values.T, origin="lower", extent=(0, lx, 0, ly), cmap=cmap,
        vmin=limits[0], vmax=limits[1], interpolation="nearest",
    )  # fmt: skip
    for b in bounds[0][1:-1]:
        ax.axvline(b * spacing[0], color="white", lw=0.4, alpha=0.6)
    for b in bounds[1][1:-1]:
        ax.axhline(b * spacing[1], color="white", lw=0.4, alpha=0.6)
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label=label, shrink=0.8)
    return save_figure(fig, path)
