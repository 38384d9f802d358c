#!/usr/bin/env bash
# Run the shallow-water app for real on 2 MPI ranks: first with a placement file, then with
# Birdshot and one greedy migration (printed as it happens), keeping the run record.
set -euo pipefail
G=${GRAPESHOT:-grapeshot}
MPIEXEC=${MPIEXEC:-mpiexec}
OUT=${OUT:-$(mktemp -d)}
$G place --synthetic dambreak:parts=8x8,steps=1 --machine plafrim --nodes 2 \
    --strategy cyclic --out "$OUT/cyclic.json" > /dev/null
$MPIEXEC -n 2 $G run swe --parts 8,8 --steps 6 --placement "$OUT/cyclic.json"
$MPIEXEC -n 2 $G run swe --parts 8,8 --steps 6 --migrate-at 3 --record "$OUT/run.h5"
$G show "$OUT/run.h5"
