#!/usr/bin/env bash
# Map an 8 x 8 stencil's tasks onto 4 nodes of 2 sockets of 8 cores (TreeMatch's tleaf), with
# TreeMatch and the other mapping strategies: who puts heavy talkers closest?
set -euo pipefail
G=${GRAPESHOT:-grapeshot}
OUT=${OUT:-$(mktemp -d)}
python3 - "$OUT/stencil.mtx" <<'PY'
import sys
n, lines = 8, []
for i in range(n):
    for j in range(n):
        for di, dj in ((0, 1), (1, 0)):
            if i + di < n and j + dj < n:
                a, b = i * n + j, (i + di) * n + j + dj
                lines += [f"{a + 1} {b + 1} 1000", f"{b + 1} {a + 1} 1000"]
with open(sys.argv[1], "w") as fh:
    fh.write("%%MatrixMarket matrix coordinate real general\n")
    fh.write(f"{n * n} {n * n} {len(lines)}\n" + "\n".join(lines) + "\n")
PY
$G map --matrix "$OUT/stencil.mtx" --tleaf "tleaf 3 4 1000 2 100 8 10" --strategy all --json \
    | python3 -c 'import json, sys
for s in json.load(sys.stdin)["strategies"]:
    c = s["cost"]
    print(f"{s['"'"'strategy'"'"']:12s} hop-bytes {c['"'"'hop_bytes'"'"']:.0f}  SUM_COM {c['"'"'sum_com'"'"']:.0f}")'
