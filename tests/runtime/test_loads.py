"""What a rebalance weighs on real ranks (``--loads``): the work counts of a segment, or the
CPU seconds its tasks took, per partition and step."""

from __future__ import annotations

import pytest

from grapeshot.model.errors import InputError
from grapeshot.model.program import Program
from grapeshot.runtime.driver import load_kind
from grapeshot.runtime.results import RankResult
from grapeshot.runtime.run_options import RunOptions
from grapeshot.runtime.timeline import TaskRecord
from tests.runtime.toy_programs import Heat


def _result() -> RankResult:
    # Partitions 5 and 3, steps 10 and 11, two phases: a task per (partition, step, phase).
    tasks = TaskRecord(
        part=[5, 3, 5, 3, 3, 5, 3, 5],
        step=[10, 10, 10, 10, 11, 11, 11, 11],
        phase=[0, 0, 1, 1, 0, 0, 1, 1],
        cpu=[1.0, 2.0, 0.5, 0.25, 4.0, 8.0, 16.0, 32.0],
    )
    return RankResult(
        rank=1, blocks={}, tasks=tasks, work={5: [7, 9], 3: [1, 2]}, wall=1.0, threads=1,
        bytes_sent=0, messages=0, time=0.0, halo_bytes={},
    )  # fmt: skip


def test_a_segments_loads_are_its_work_counts_or_its_tasks_seconds() -> None:
    parts, work = _result().loads("work")
    assert parts.tolist() == [3, 5]
    assert work.tolist() == [[1.0, 7.0], [2.0, 9.0]]  # (steps, partitions)
    parts, cpu = _result().loads("cpu")
    assert parts.tolist() == [3, 5]
    assert cpu.tolist() == [[2.25, 1.5], [20.0, 40.0]]  # every phase of a step summed


def test_auto_weighs_work_counts_where_the_program_counts_them_else_seconds() -> None:
    class Cells(Heat):
        work = Program.work  # the default: a partition's cells, all alike

    class Counted(Cells):
        work_field = "u"

    class Counts(Cells):
        def work(self, block, box):
            return 1

    assert load_kind(Cells(domain=(8, 8), parts=(2, 2)), "auto") == "cpu"
    assert load_kind(Counted(domain=(8, 8), parts=(2, 2)), "auto") == "work"
    assert load_kind(Counts(domain=(8, 8), parts=(2, 2)), "auto") == "work"
    assert load_kind(Counted(domain=(8, 8), parts=(2, 2)), "cpu") == "cpu"
    assert load_kind(Cells(domain=(8, 8), parts=(2, 2)), "work") == "work"


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"loads": "seconds", "migrate_at": 1}, "one of auto, work, cpu"),
        ({"loads": "cpu"}, "never rebalances"),
    ],
)
def test_loads_are_refused_naming_the_option(options, problem) -> None:
    with pytest.raises(InputError, match="--loads") as refused:
        RunOptions(steps=4, strategy="birdshot", seed=0, **options)
    assert problem in str(refused.value)
