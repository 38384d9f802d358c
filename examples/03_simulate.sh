#!/usr/bin/env bash
# Predict time per step on a modelled cluster: strategies x partitions per core, then the
# placement written by 02_place.sh's command, as it is.
set -euo pipefail
G=${GRAPESHOT:-grapeshot}
OUT=${OUT:-$(mktemp -d)}
SPEC=dambreak:parts=48x48,steps=20
$G simulate --synthetic $SPEC --machine ec2-c4.8xlarge --nodes 8 \
    --strategy geometric,birdshot --ppc 1,2 --figure "$OUT/sim.png" --json \
    | python3 -c 'import json, sys
doc = json.load(sys.stdin)
for r in doc["runs"]:
    print(r["strategy"], r["ppc"], r["parts"], f"{r['"'"'step_time_mean'"'"'] * 1e3:.4f} ms")'
$G place --synthetic $SPEC --machine ec2-c4.8xlarge --nodes 8 --strategy birdshot \
    --out "$OUT/placement.json" > /dev/null
$G simulate --synthetic $SPEC --machine ec2-c4.8xlarge --placement "$OUT/placement.json" \
    --no-figure --json \
    | python3 -c 'import json, sys
r = json.load(sys.stdin)["runs"][0]
print(r["strategy"], r["ppc"], r["parts"], f"{r['"'"'step_time_mean'"'"'] * 1e3:.4f} ms")'
