#!/usr/bin/env bash
# Dynamic load balancing on a moving load: replay strategies over a trace (no machine
# model: what moves, how balanced), then simulate them on a cluster (what it costs in time).
set -euo pipefail
G=${GRAPESHOT:-grapeshot}
SPEC=dambreak:parts=32x16,steps=90
for s in reactive refine birdshot-dynamic; do
    $G place --synthetic $SPEC --machine gcp-n1-highmem-8 --strategy $s --interval 15 --json \
        | python3 -c 'import json, sys
d = json.load(sys.stdin)
print(d["strategy"], "LIF", f"{d['"'"'lif_mean'"'"']:.4f}", "migrations", d["migrations"],
      "rebalances", d["rebalances"])'
done
$G simulate --synthetic $SPEC --machine gcp-n1-highmem-8 --ppc 8 --interval 15 \
    --strategy geometric,birdshot,reactive,refine,birdshot-dynamic --no-figure --json \
    | python3 -c 'import json, sys
for r in json.load(sys.stdin)["runs"]:
    print(r["strategy"], f"{r['"'"'step_time_mean'"'"'] * 1e3:.4f} ms/step",
          "migrations", r["migrations"], "MB moved", f"{r['"'"'migrated_bytes'"'"'] / 1e6:.2f}")'
