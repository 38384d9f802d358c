"""Beatnik's Z-Model of Rayleigh-Taylor interfaces (spec ``zmodel.md``).

Modules: :mod:`.params` (settings and defaults), :mod:`.mesh` (node placement, 2-D block
decomposition, initial state), :mod:`.operators` (differences, Laplacian, ghosts, Riesz),
:mod:`.kernels` (numba Birkhoff-Rott sums), :mod:`.model` (F and SSP-RK3 over a backend),
:mod:`.fft` (distributed 2-D FFT plans), :mod:`.cutoff` (spatial mesh of the cutoff solver),
:mod:`.balance` (its micro-partitions' load on simulated ranks, and a random placement's
expected spread),
:mod:`.views` (Beatnik's view files), :mod:`.driver` (the MPI backend and run loop),
:mod:`.trace` (the run as a grapeshot workload; ``SCENES`` and ``make_trace`` make the
package a trace generator of :data:`grapeshot.apps.APPS`), :mod:`.output` (VTK files of the
surface, gathered on rank 0), :mod:`.fft_timing` (a script timing the FFT configurations).

Layers, each importing only those before it: params → kernels, operators → mesh, views →
cutoff → model, fft, balance, output → trace, driver → fft_timing.
"""

from grapeshot.apps.zmodel.params import ZModelParams
from grapeshot.apps.zmodel.trace import SCENES, make_trace

__all__ = ["SCENES", "ZModelParams", "make_trace"]
