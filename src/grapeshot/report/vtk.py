"""VTK output ParaView reads: XML ImageData (``.vti``) of grid fields and ``.pvd`` series."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from grapeshot.model.atomic import atomic_path, write_text_atomic
from grapeshot.model.errors import InputError


def _vtk_type(dtype: np.dtype) -> str:
    names = {("f", 8): "Float64", ("f", 4): "Float32", ("i", 8): "Int64", ("i", 4): "Int32",
             ("i", 1): "Int8", ("u", 1): "UInt8", ("b", 1): "UInt8"}  # fmt: skip
    key = (dtype.kind, dtype.itemsize)
    if key not in names:
        raise InputError("field", f"has dtype {dtype}", "a float, int or bool array")
    return names[key]


_NUMPY_TYPES = {"Float64": "<f8", "Float32": "<f4", "Int64": "<i8", "Int32": "<i4",
                "Int8": "i1", "UInt8": "u1"}  # fmt: skip


def write_vti(
    path: str | Path,
    fields: dict[str, np.ndarray],
    spacing: Sequence[float],
    *,
    origin: Sequence[float] | None = None,
) -> Path:
    """Write grid fields as a VTK XML ImageData file (cell data, appended raw binary).

    ParaView and VTK's ``vtkXMLImageDataReader`` read it; open the ``.pvd`` of
    :func:`write_pvd` to get the frames as a time series.

    Parameters
    ----------
    path
        Destination (``.vti``); written atomically.
    fields
        Name → array shaped like the grid (2-D or 3-D, axis 0 = x); all the same shape.
        Booleans are written as UInt8.
    spacing
        Cell size per axis, m.
    origin
        Position of the grid's low corner, m (default 0).

    Returns
    -------
    Path
        ``path``.
    """
    shape = next(iter(fields.values())).shape
    ndim = len(shape)
    if ndim not in (2, 3) or any(a.shape != shape for a in fields.values()):
        raise InputError("fields", "have different or unsupported shapes", "2-D or 3-D grids")
    # Point extents: n cells span n + 1 points; a 2-D grid is one point thick in z.
    extent = " ".join(f"0 {n}" for n in shape) + (" 0 0" if ndim == 2 else "")
    spacing3 = [float(x) for x in spacing][:ndim] + [1.0] * (3 - ndim)
    origin3 = [float(x) for x in (origin or ())][:ndim]
    origin3 += [0.0] * (3 - len(origin3))
    lines = [
        '<?xml version="1.0"?>',
        '<VTKFile type="ImageData" version="1.0" byte_order="LittleEndian" header_type="UInt64">',
        f'  <ImageData WholeExtent="{extent}" Origin="{" ".join(map(repr, origin3))}" '
        f'Spacing="{" ".join(map(repr, spacing3))}">',
        f'    <Piece Extent="{extent}">',
        f'      <CellData Scalars="{next(iter(fields))}">',
    ]
    blobs = []
    offset = 0
    for name, arr in fields.items():
        vtk_type = _vtk_type(arr.dtype)
        # VTK orders cells with x fastest: the Fortran order of our (x, y[, z]) arrays.
        data = np.asarray(arr, dtype=_NUMPY_TYPES[vtk_type]).ravel(order="F").tobytes()
        blobs.append(np.array(len(data), dtype="<u8").tobytes() + data)
        lines.append(
            f'        <DataArray type="{vtk_type}" Name="{name}" format="appended" '
            f'offset="{offset}"/>'
        )
        offset += len(blobs[-1])
    lines += ["      </CellData>", "    </Piece>", "  </ImageData>"]
    lines += ['  <AppendedData encoding="raw">', "   _"]
    with atomic_path(path) as tmp:
        tmp.write_bytes(
            "\n".join(lines).encode() + b"".join(blobs) + b"\n  </AppendedData>\n</VTKFile>\n"
        )
    return Path(path)


def read_vti(path: str | Path) -> dict[str, np.ndarray]:
    """Read back what :func:`write_vti` wrote: name → grid array (axis 0 = x)."""
    raw = Path(path).read_bytes()
    marker = raw.index(b"<AppendedData")
    start = raw.index(b"_", marker) + 1
    image = ET.fromstring(raw[:marker] + b"</VTKFile>").find("ImageData")
    if image is None:
        raise InputError(str(path), "has no ImageData", "a .vti file written by grapeshot")
    ext = [int(v) for v in image.get("WholeExtent", "").split()]
    shape = tuple(ext[2 * a + 1] - ext[2 * a] for a in range(3))
    shape = shape if shape[2] > 0 else shape[:2]
    out = {}
    for node in image.iter("DataArray"):
        at = start + int(node.get("offset", "0"))
        nbytes = int(np.frombuffer(raw[at : at + 8], dtype="<u8")[0])
        flat = np.frombuffer(raw[at + 8 : at + 8 + nbytes], dtype=_NUMPY_TYPES[node.get("type")])
        out[node.get("Name", "")] = flat.reshape(shape, order="F")
    return out


def write_pvd(path: str | Path, frames: Sequence[tuple[float, str]]) -> Path:
    """A ParaView collection (``.pvd``) of ``(time, file name)`` frames; written atomically."""
    rows = "\n".join(
        f'    <DataSet timestep="{t!r}" group="" part="0" file="{name}"/>' for t, name in frames
    )
    text = (
        '<?xml version="1.0"?>\n'
        '<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">\n'
        f"  <Collection>\n{rows}\n  </Collection>\n</VTKFile>\n"
    )
    write_text_atomic(path, text)
    return Path(path)
