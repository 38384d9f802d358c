"""Figures, written atomically as PNG or SVG (by the file's suffix)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt
import numpy as np

from grapeshot.model.atomic import atomic_path


def save_figure(fig: plt.Figure, path: str | os.PathLike[str]) -> Path:
    """Save ``fig`` to ``path`` atomically and close it; the format follows the suffix."""
    final = Path(path)
    fmt = final.suffix.lstrip(".").lower() or "png"
    with atomic_path(final) as tmp:
        fig.savefig(tmp, format=fmt, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return final


def node_load_figure(
    loads: Mapping[str, np.ndarray],
    lifs: Mapping[str, np.ndarray],
    *,
    title: str,
    units: str = "s",
) -> plt.Figure:
    """Per-node load over time for several placements, and their LIF per step.

    Parameters
    ----------
    loads
        Placement label → ``(steps, nodes)`` load per node per step.
    lifs
        Placement label → ``(steps,)`` LIF per step.
    """
    labels = list(loads)
    fig, axes = plt.subplots(
        len(labels) + 1, 1, figsize=(8, 2.6 * (len(labels) + 1)), constrained_layout=True
    )
    vmax = max(float(v.max()) for v in loads.values()) or 1.0
    for ax, label in zip(axes, labels, strict=False):
        image = ax.imshow(
            loads[label].T,
            aspect="auto",
            origin="lower",
            cmap="viridis",
            vmin=0,
            vmax=vmax,
            interpolation="nearest",
        )
        ax.set_title(f"{label}: load per node per step")
        ax.set_ylabel("node")
        fig.colorbar(image, ax=ax, label=f"load ({units})")
    ax = axes[-1]
    for label in labels:
        lif = lifs[label]
        ax.plot(np.arange(len(lif)), lif, label=f"{label} (mean {lif.mean():.2f})")
    ax.set_xlabel("step")
    ax.set_ylabel("LIF = max/mean − 1")
    ax.set_title("load imbalance factor per step")
    ax.legend()
    fig.suptitle(title)
    return fig
