#!/usr/bin/env bash
# Record the shallow-water dam break's cost per partition (work units: deterministic), look at
# the trace, and simulate it on 2 PlaFRIM nodes.
set -euo pipefail
G=${GRAPESHOT:-grapeshot}
OUT=${OUT:-$(mktemp -d)}
$G trace swe --scene dambreak --parts 8,8 --cells 128,64 --steps 40 --units work \
    --out "$OUT/swe.h5" > /dev/null
$G show "$OUT/swe.h5" --json | python3 -c 'import json, sys
d = json.load(sys.stdin)
print(d["kind"], d["app"], d["parts"], "partitions", d["steps"], "steps, units", d["units"])'
$G simulate --trace "$OUT/swe.h5" --machine plafrim --nodes 2 --strategy geometric,birdshot \
    --ppc 1,2 --seconds-per-work 1e-6 --no-figure
