#!/usr/bin/env bash
# The machine presets, and a machine of your own (docs/machines.md) used by place.
set -euo pipefail
G=${GRAPESHOT:-grapeshot}
OUT=${OUT:-$(mktemp -d)}
COLUMNS=80 $G machines
cat > "$OUT/lab.toml" <<'TOML'
name = "lab"
nodes = 4

[node]
levels = [["socket", 2], ["core", 8]]

[network]
topology = "flat"
latency = 2e-6
bandwidth = 12.5e9
TOML
$G show "$OUT/lab.toml" --json | sed "s#$OUT/##"
$G place --synthetic dambreak:parts=16x16,steps=10 --machine "$OUT/lab.toml" --json
