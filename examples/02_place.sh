#!/usr/bin/env bash
# Place a dam break's 48x48 partitions on 8 EC2 nodes with Birdshot, keep the placement.
set -euo pipefail
G=${GRAPESHOT:-grapeshot}
OUT=${OUT:-$(mktemp -d)}
$G place --synthetic dambreak:parts=48x48,steps=50 --machine ec2-c4.8xlarge --nodes 8 \
    --strategy birdshot --seed 1 --out "$OUT/placement.json" --json
# The same grid written with commas, and the geometric strategy, for comparison.
$G place --synthetic dambreak:parts=48,48,steps=50 --machine ec2-c4.8xlarge --nodes 8 \
    --strategy geometric --json
$G show "$OUT/placement.json" --json | sed "s#$OUT/##"
