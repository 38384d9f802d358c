"""VTK output of the surface: one XML StructuredGrid (``.vts``) per written step and a ``.pvd``
series, gathered on rank 0 (ParaView opens the ``.pvd``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np

from grapeshot.apps.zmodel import operators as op
from grapeshot.model.atomic import atomic_path, write_text_atomic


def write_vts(path: str | Path, points: np.ndarray, fields: dict[str, np.ndarray]) -> Path:
    """Write a curvilinear surface as VTK XML StructuredGrid (appended raw binary).

    Parameters
    ----------
    points
        float64 (3, n1, n2): node positions.
    fields
        name -> (c, n1, n2) node data (c = 1 scalar, else a vector of c components).
    """
    n1, n2 = points.shape[1:]
    arrays = [("Points", points), *list(fields.items())]
    root = ET.Element(
        "VTKFile",
        type="StructuredGrid",
        version="1.0",
        byte_order="LittleEndian",
        header_type="UInt64",
    )
    extent = f"0 {n1 - 1} 0 {n2 - 1} 0 0"
    grid = ET.SubElement(root, "StructuredGrid", WholeExtent=extent)
    piece = ET.SubElement(grid, "Piece", Extent=extent)
    pdata = ET.SubElement(piece, "PointData")
    pts = ET.SubElement(piece, "Points")
    offset = 0
    blobs = []
    for name, a in arrays:
        # VTK orders points x fastest: (n2, n1, c) in C order.
        flat = np.ascontiguousarray(np.transpose(a, (2, 1, 0)), dtype="<f8")
        parent = pts if name == "Points" else pdata
        ET.SubElement(
            parent,
            "DataArray",
            type="Float64",
            Name=name,
            NumberOfComponents=str(a.shape[0]),
            format="appended",
            offset=str(offset),
        )
        blob = np.uint64(flat.nbytes).tobytes() + flat.tobytes()
        blobs.append(blob)
        offset += len(blob)
    ET.SubElement(root, "AppendedData", encoding="raw").text = "_"
    head = ET.tostring(root, encoding="unicode")
    cut = head.rindex("_</AppendedData>") + 1
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(head[:cut].encode())
            for blob in blobs:
                fh.write(blob)
            fh.write(head[cut:].encode())
    return Path(path)


def gather_owned(be: Any, f: np.ndarray) -> np.ndarray | None:
    """The global owned field (c, N, N) on rank 0 (None elsewhere).

    ``be`` is an MPI backend (:class:`~grapeshot.apps.zmodel.driver.MPIBackend`: its ``cart``,
    ``rank``, ``params`` and ``blocks``); typed loosely so this module stays below the driver.
    """
    parts = be.cart.gather(np.ascontiguousarray(op.owned(f)), root=0)
    if be.rank != 0:
        return None
    n = be.params.nodes
    out = np.empty((f.shape[0], n, n))
    for b, a in zip(be.blocks, parts, strict=True):
        out[:, b.i0 : b.i1, b.j0 : b.j1] = a
    return out


def write_surface_vtk(
    directory: str | Path, step: int, t: float, z: np.ndarray, w: np.ndarray, be
) -> None:
    """Gather the surface on rank 0 and write ``surface_{step:05d}.vts`` + ``surface.pvd``."""
    zg, wg = gather_owned(be, z), gather_owned(be, w)
    if zg is None:
        return
    d = Path(directory)
    name = f"surface_{step:05d}.vts"
    mag = np.sqrt((wg * wg).sum(axis=0, keepdims=True))
    write_vts(d / name, zg, {"vorticity": wg, "vorticity_magnitude": mag})
    series = getattr(be, "_vtk_frames", [])
    series.append((t, name))
    be._vtk_frames = series
    items = "\n".join(f'    <DataSet timestep="{tt!r}" file="{f}"/>' for tt, f in series)
    write_text_atomic(
        d / "surface.pvd",
        '<?xml version="1.0"?>\n<VTKFile type="Collection" '
        f'version="1.0">\n  <Collection>\n{items}\n  </Collection>\n</VTKFile>\n',
    )
