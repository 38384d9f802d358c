"""Load-imbalance theory: Birdshot's eq. 2 and its exact counterparts, TreeMatchLB theorem 1."""
