#!/usr/bin/env bash
# How unbalanced is a random placement of micro-partitions, and how many do I need?
set -euo pipefail
G=${GRAPESHOT:-grapeshot}
# 32 nodes, 128 partitions each, 60 % of them busy: the exact E[LIF] and eq. 2.
$G lif --nodes 32 --parts-per-node 128 --busy 0.6 --json
# The fewest partitions per node (and per core, 18 cores) for E[LIF] <= 0.1 on 1024 nodes.
$G advise --nodes 1024 --busy 0.3 --target-lif 0.1 --cores-per-node 18 --json
# TreeMatchLB's theorem 1: will two of 128 nodes drift more than 5 % apart?
$G theorem1 --chares-per-node 64 --nodes 128 --alpha 0.05 --a 50 --b 100 --json
