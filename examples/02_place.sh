#!/usr/bin/env bash
# Place a dam break's 48x48 partitions on 8 EC2 nodes with Birdshot, keep the placement;
# then the same grid a rank per partition, for your own MPI code.
set -euo pipefail
G=${GRAPESHOT:-grapeshot}
OUT=${OUT:-$(mktemp -d)}
$G place --synthetic dambreak:parts=48x48,steps=50 --machine ec2-c4.8xlarge --nodes 8 \
    --strategy birdshot --seed 1 --out "$OUT/placement.json" --json
# The same grid written with commas, and the geometric strategy, for comparison.
$G place --synthetic dambreak:parts=48,48,steps=50 --machine ec2-c4.8xlarge --nodes 8 \
    --strategy geometric --json
$G show "$OUT/placement.json" --json | sed "s#$OUT/##"
# For your own MPI code: the geometric placement with 4 ranks on each node, a rank per
# partition (examples/read_part.c reads it; mpiexec -n 32 for these 32 ranks).
$G place --grid 48x48 --machine ec2-c4.8xlarge --nodes 8 --strategy geometric \
    --ranks-per-node 4 --out "$OUT/ranks.part" --json
head -n 1 "$OUT/ranks.part"
$G show "$OUT/ranks.part" --json | sed "s#$OUT/##"
