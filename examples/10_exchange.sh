#!/usr/bin/env bash
# Schedule a 16-regular all-to-many exchange of 4 KiB messages on the simulated CM-5 (a node
# receiving several messages at once serves their packets in turn): phases and predicted time
# per algorithm.
set -euo pipefail
G=${GRAPESHOT:-grapeshot}
$G exchange --pattern regular:d=16,unit=4096,seed=1 --algorithms all --simulate cm5 \
    --nodes 32 --json \
    | python3 -c 'import json, sys
for a in json.load(sys.stdin)["algorithms"]:
    print(f"{a['"'"'algorithm'"'"']:10s} phases {a['"'"'phases'"'"']:3d}  comm {a['"'"'comm_seconds'"'"'] * 1e3:.3f} ms")'
