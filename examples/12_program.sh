#!/usr/bin/env bash
# Your own program through grapeshot (docs/program-api.md): the heat plate of
# examples/program/heat.py run serially and on 2 MPI ranks (the same digest), checked, traced,
# simulated on 4 EC2 nodes whose 72 cores do not divide its 256 partitions, placed into a
# METIS-style .part file, and that file read by a C program.
set -euo pipefail
G=${GRAPESHOT:-grapeshot}
MPIEXEC=${MPIEXEC:-mpiexec}
OUT=${OUT:-$(mktemp -d)}
HERE=$(cd "$(dirname "$0")" && pwd)
APP="$HERE/program/heat.py:make_heat"
SIZE=(--cells 256,256 --steps 20)

digest() { python3 -c 'import json, sys; print(json.load(sys.stdin)["fields_digest"][:16])'; }
echo "serial:             $($G run --app "$APP" --executor serial --parts 4,4 "${SIZE[@]}" --json | digest)"
echo "geometric 2x1:      $($MPIEXEC -n 2 $G run --app "$APP" --strategy geometric --parts 2,1 "${SIZE[@]}" --json | digest)"
echo "birdshot 16x16:     $($MPIEXEC -n 2 $G run --app "$APP" --strategy birdshot --parts 16,16 "${SIZE[@]}" --json | digest)"
# The check the tutorial runs first: partitioned runs give the 1x1 run's bits after every phase.
$G check --app "$APP" --cells 64,64 --steps 2 > "$OUT/check.txt"
head -n 1 "$OUT/check.txt"

# The trace holds each partition's measured kernel seconds per step.
$G trace --app "$APP" --parts 16,16 --cells 1024,1024 --steps 20 --out "$OUT/heat.h5" > /dev/null
$G simulate --trace "$OUT/heat.h5" --machine ec2-c4.8xlarge --nodes 4 \
    --strategy geometric,birdshot --no-figure
$G place --trace "$OUT/heat.h5" --machine ec2-c4.8xlarge --nodes 4 --strategy birdshot \
    --out "$OUT/heat.part" > /dev/null
if command -v cc > /dev/null; then
    cc -std=c99 -O2 -o "$OUT/read_part" "$HERE/read_part.c"
    "$OUT/read_part" "$OUT/heat.part" | cut -c1-60
fi
