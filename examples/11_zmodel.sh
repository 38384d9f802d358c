#!/usr/bin/env bash
# Beatnik's Z-Model on 2 MPI ranks: a low-order run (distributed FFT), then a high-order
# cutoff run whose spatial micro-partitions Birdshot places; the interface's height and the
# points per rank are the same whatever the placement.
set -euo pipefail
G=${GRAPESHOT:-grapeshot}
M=${MPIEXEC:-mpiexec}
$M -n 2 $G zmodel --order low --mesh 32 --steps 5 --json \
    | python3 -c 'import json, sys
d = json.load(sys.stdin)
print("low", d["ranks"], "ranks, max height", f"{d['"'"'max_height'"'"']:.10f}")'
for s in beatnik birdshot; do
    $M -n 2 $G zmodel --order high --solver cutoff --cutoff 0.5 --mesh 24 --steps 2 \
        --boundary free --spatial-parts 4,4 --spatial-strategy $s --json \
        | python3 -c 'import json, sys
d = json.load(sys.stdin)
print("high cutoff", d["spatial_strategy"], "max height", f"{d['"'"'max_height'"'"']:.10f}")'
done
