"""Partitions: sacct's ``Partition`` column and SWF field 16, merged (and said so) or selected.

The counts are computed by hand from the logs below.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grapeshot.jobs.partitions import partition_counts, partition_names, select_partitions
from grapeshot.jobs.sacct import parse_sacct_text
from grapeshot.jobs.swf import format_swf, parse_swf_text
from grapeshot.model.errors import InputError
from tests.cli.helpers import run_cli, run_main

# Six jobs (one step row, skipped): batch 10, 12, 15; debug 11, 14 and the pending 13,
# submitted to "debug,batch" and counted in debug, its first. 13 never started: cleaning drops
# it as unrunnable, so 3 batch and 2 debug jobs are simulated.
ACCT = """\
JobID|User|Submit|Start|Elapsed|Timelimit|NCPUS|State|Partition
10|ana|2024-03-01T10:00:00|2024-03-01T10:00:00|01:00:00|02:00:00|8|COMPLETED|batch
10.batch||2024-03-01T10:00:00|2024-03-01T10:00:00|01:00:00||8|COMPLETED|batch
11|ben|2024-03-01T10:01:00|2024-03-01T10:01:00|00:10:00|00:30:00|2|COMPLETED|debug
12|ana|2024-03-01T10:02:00|2024-03-01T10:05:00|01:00:00|02:00:00|8|COMPLETED|batch
13|cy|2024-03-01T10:03:00|Unknown|00:00:00|02:00:00|4|PENDING|debug,batch
14|ben|2024-03-01T10:04:00|2024-03-01T10:04:00|00:05:00|00:30:00|1|COMPLETED|debug
15|cy|2024-03-01T10:06:00|2024-03-01T10:06:00|00:20:00|01:00:00|16|COMPLETED|batch
"""

# An SWF log naming its partitions in the header (as the Seth log does): jobs 1, 4, 6 in
# partition 1 (short), 2, 3, 5 in 2 (long), 7 with none recorded (-1).
SWF = """\
; MaxProcs: 8
; MaxPartitions: 2
; Partition: 1 short
; Partition: 2 long
1 0 -1 60 1 -1 -1 1 120 -1 1 1 1 -1 -1 1 -1 -1
2 10 -1 600 4 -1 -1 4 1200 -1 1 2 1 -1 -1 2 -1 -1
3 20 -1 900 8 -1 -1 8 1800 -1 1 2 1 -1 -1 2 -1 -1
4 30 -1 30 2 -1 -1 2 60 -1 1 1 1 -1 -1 1 -1 -1
5 40 -1 300 2 -1 -1 2 600 -1 1 3 1 -1 -1 2 -1 -1
6 50 -1 45 1 -1 -1 1 60 -1 1 3 1 -1 -1 1 -1 -1
7 60 -1 100 1 -1 -1 1 200 -1 1 3 1 -1 -1 -1 -1 -1
"""


def test_sacct_reads_partitions_in_order_of_first_appearance() -> None:
    read = parse_sacct_text(ACCT, "acct.txt")
    t = read.trace
    assert not read.bad and read.lines == 6
    assert t.job_id.tolist() == [10, 11, 12, 13, 14, 15]
    assert t.partition.tolist() == [1, 2, 1, 2, 2, 1]  # 13 "debug,batch": debug
    assert t.header["MaxPartitions"] == "2"
    assert t.header["Partition"] == "1 batch\n2 debug"
    assert partition_names(t) == {1: "batch", 2: "debug"}
    counts = [c.as_dict() for c in partition_counts(t)]
    assert counts == [{"name": "batch", "number": 1, "jobs": 3},
                      {"name": "debug", "number": 2, "jobs": 3}]  # fmt: skip


def test_sacct_partitions_survive_swf() -> None:
    t = parse_sacct_text(ACCT, "acct.txt").trace
    back = parse_swf_text(format_swf(t), "acct.swf", strict=True).trace
    assert back.partition.tolist() == t.partition.tolist()
    assert partition_names(back) == {1: "batch", 2: "debug"}
    assert "; Partition: 1 batch\n; Partition: 2 debug\n" in format_swf(t)


def test_sacct_without_partitions_or_with_a_bad_one() -> None:
    head, *rows = ACCT.splitlines()
    plain = "\n".join(["|".join(r.split("|")[:-1]) for r in [head, *rows]])
    t = parse_sacct_text(plain, "acct.txt").trace
    assert (t.partition == -1).all() and "Partition" not in t.header
    assert partition_counts(t) == ()
    empty = ACCT.replace("|debug\n", "|\n")  # 11 and 14: none recorded
    t = parse_sacct_text(empty, "acct.txt").trace
    assert t.partition.tolist() == [1, -1, 1, 2, -1, 1]  # 13: debug, second to appear
    assert [c.as_dict() for c in partition_counts(t)][-1] == {
        "name": None, "number": None, "jobs": 2}  # fmt: skip
    bad = ACCT.replace("|debug\n", "|de bug\n", 1)
    read = parse_sacct_text(bad, "acct.txt")
    assert len(read.bad) == 1 and len(read.trace) == 5
    assert str(read.bad[0]) == ("acct.txt line 4 column Partition: got 'de bug'; expected a "
                                "partition name without spaces")  # fmt: skip
    with pytest.raises(InputError, match="line 4 column Partition"):
        parse_sacct_text(bad, "acct.txt", strict=True)


def test_select_partitions_by_name_or_number() -> None:
    t = parse_sacct_text(ACCT, "acct.txt").trace
    kept, step = select_partitions(t, "debug", "acct.txt")
    assert kept.job_id.tolist() == [11, 13, 14]
    assert (step.name, step.affected, step.remaining) == ("drop-other-partitions", 3, 3)
    kept, step = select_partitions(t, ["1", "batch"], "acct.txt")  # the same one twice
    assert kept.job_id.tolist() == [10, 12, 15] and step.affected == 3
    kept, step = select_partitions(t, "batch,2", "acct.txt")
    assert len(kept) == 6 and step.affected == 0
    with pytest.raises(InputError) as exc:
        select_partitions(t, "batch,gpu", "acct.txt")
    assert str(exc.value) == ("--partition gpu: no partition 'gpu' in acct.txt; expected one "
                              "of batch (1), debug (2)")  # fmt: skip
    with pytest.raises(InputError, match=r"^--partition: got an empty name"):
        select_partitions(t, "batch,", "acct.txt")


def test_swf_field_16_selects_with_header_names_or_numbers() -> None:
    t = parse_swf_text(SWF, "log.swf", strict=True).trace
    assert partition_names(t) == {1: "short", 2: "long"}
    assert [(c.label, c.jobs) for c in partition_counts(t)] == [
        ("short", 3), ("long", 3), ("no partition", 1)]  # fmt: skip
    for wanted in ("long", "2"):
        kept, step = select_partitions(t, wanted, "log.swf")
        assert kept.job_id.tolist() == [2, 3, 5] and step.affected == 4
    # A partition the header names but no job ran in (the Seth log's "2 ALL") holds no job.
    idle = parse_swf_text(SWF.replace("; Partition: 2 long", "; Partition: 2 long\n"
                                      "; Partition: 3 gpu"), "log.swf").trace  # fmt: skip
    for wanted in ("gpu", "3"):
        with pytest.raises(InputError) as exc:
            select_partitions(idle, wanted, "log.swf")
        assert str(exc.value) == (f"--partition {wanted}: partition {wanted!r} holds no job in "
                                  "log.swf; expected one of short (1), long (2)")  # fmt: skip
    # Without the header the numbers are the names.
    bare = parse_swf_text(SWF.replace("; Partition:", "; Other:"), "bare.swf").trace
    assert [c.as_dict()["name"] for c in partition_counts(bare)] == ["1", "2", None]
    with pytest.raises(InputError) as exc:
        select_partitions(bare, "long", "bare.swf")
    assert str(exc.value) == ("--partition long: no partition 'long' in bare.swf; expected one "
                              "of 1, 2")  # fmt: skip
    none = parse_swf_text(SWF.replace(" 1 -1 -1\n", " -1 -1 -1\n").replace(" 2 -1 -1\n",
                                      " -1 -1 -1\n"), "none.swf").trace  # fmt: skip
    assert (none.partition == -1).all()
    with pytest.raises(InputError, match=r"^--partition 1: none\.swf records no partition"):
        select_partitions(none, "1", "none.swf")


# --- through the command line ----------------------------------------------------------------


def _simulate(capsys, path: Path, *args: str):
    return run_cli(capsys, "jobs", "simulate", "--sacct" if path.suffix == ".txt" else "--swf",
                   str(path), "--policies", "user-estimate", *args)  # fmt: skip


def test_cli_says_what_is_merged(capsys, tmp_path: Path) -> None:
    path = tmp_path / "acct.txt"
    path.write_text(ACCT)
    res = _simulate(capsys, path, "--cpus", "16")
    assert res.code == 0, res.err
    assert ("merged 2 partitions into one pool of 16 CPUs: batch (3 jobs), debug (2); "
            "--partition NAME simulates one") in " ".join(res.out.split())  # fmt: skip
    doc = _simulate(capsys, path, "--cpus", "16", "--json").json()
    assert doc["partitions"] == [{"name": "batch", "number": 1, "jobs": 3},
                                 {"name": "debug", "number": 2, "jobs": 2}]  # fmt: skip
    assert doc["cleaning"][0]["step"] == "fill-procs"  # no partition step unless asked


def test_cli_partition_selects_and_counts(capsys, tmp_path: Path) -> None:
    path = tmp_path / "acct.txt"
    path.write_text(ACCT)
    res = _simulate(capsys, path, "--cpus", "16", "--partition", "debug", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    steps = {s["step"]: (s["jobs"], s["remaining"]) for s in doc["cleaning"]}
    assert doc["cleaning"][0]["step"] == "drop-other-partitions"
    assert steps["drop-other-partitions"] == (3, 3) and steps["drop-unrunnable"] == (1, 2)
    assert doc["partitions"] == [{"name": "debug", "number": 2, "jobs": 2}]
    assert doc["policies"][0]["jobs"] == 2
    res = _simulate(capsys, path, "--cpus", "16", "--partition", "1")
    assert res.code == 0, res.err
    flat = " ".join(res.out.split())
    assert "3 jobs after cleaning (drop-other-partitions 3)" in flat  # 13 was in debug
    assert "merged" not in flat  # one partition: nothing extra


def test_cli_refuses_an_unknown_partition(capsys, tmp_path: Path) -> None:
    path = tmp_path / "acct.txt"
    path.write_text(ACCT)
    res = _simulate(capsys, path, "--cpus", "16", "--partition", "batch,gpu")
    assert res.code == 2 and res.out == "", res.out
    errors = [x for x in res.err.splitlines() if x.startswith("grapeshot: error:")]
    assert errors == ["grapeshot: error: --partition gpu: no partition 'gpu' in acct.txt; "
                      "expected one of batch (1), debug (2)"], res.err  # fmt: skip


def test_cli_swf_partitions(capsys, tmp_path: Path) -> None:
    path = tmp_path / "log.swf"
    path.write_text(SWF)
    res = _simulate(capsys, path)
    assert res.code == 0, res.err
    assert ("merged 3 partitions into one pool of 8 CPUs: short (3 jobs), long (3), "
            "no partition (1)") in " ".join(res.out.split())  # fmt: skip
    doc = _simulate(capsys, path, "--partition", "short", "--json").json()
    assert doc["cleaning"][0] == {"step": "drop-other-partitions", "jobs": 4, "remaining": 3}
    assert doc["partitions"] == [{"name": "short", "number": 1, "jobs": 3}]
    # One partition recorded (the Seth log's case): nothing extra said.
    single = tmp_path / "single.swf"
    single.write_text(SWF.replace(" 2 -1 -1\n", " 1 -1 -1\n").replace(" -1 -1 -1\n",
                                                                       " 1 -1 -1\n"))  # fmt: skip
    res = _simulate(capsys, single)
    assert res.code == 0 and "merged" not in res.out, res.out
    doc = _simulate(capsys, single, "--json").json()
    assert doc["partitions"] == [{"name": "short", "number": 1, "jobs": 7}]


def test_help_explains_partition() -> None:
    res = run_main("jobs", "simulate", "--help")
    assert res.code == 0
    flat = " ".join(res.out.split())
    assert "--partition" in flat and "Simulate only these partitions' jobs" in flat


def test_counts_sum_to_the_trace() -> None:
    for t in (parse_sacct_text(ACCT, "a.txt").trace, parse_swf_text(SWF, "l.swf").trace):
        assert sum(c.jobs for c in partition_counts(t)) == len(t)
        every = [str(c.number) for c in partition_counts(t) if c.number is not None]
        kept, step = select_partitions(t, every)
        assert len(kept) == int(np.sum(t.partition >= 0)) and step.remaining == len(kept)
