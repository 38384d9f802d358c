"""The same as 02_place.sh, from Python: a workload, a machine, a placement and its metrics."""

from __future__ import annotations

from grapeshot.model.machine_file import load_machine
from grapeshot.model.placement import placement_metrics
from grapeshot.model.synthetic import synthetic_workload
from grapeshot.place import place


def main() -> None:
    """Place a 48x48 dam break on 8 EC2 nodes with each static strategy; print the LIF."""
    workload = synthetic_workload("dambreak:parts=48x48,steps=50")
    machine = load_machine("ec2-c4.8xlarge", nodes=8)
    for strategy in ("geometric", "cyclic", "sfc", "birdshot"):
        placement = place(workload, machine, strategy, seed=1)
        m = placement_metrics(placement, workload, machine)
        share = m.bytes_cut / m.bytes_total
        print(f"{strategy:<10} LIF mean {m.lif_mean:.4f}  halo bytes cut {share:.1%}")


if __name__ == "__main__":
    main()
