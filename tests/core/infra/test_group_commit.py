"""Group commits of episodes.jsonl: batched writes, done only once fsynced, nothing acknowledged
lost when the writer is SIGKILLed at random instants."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

from cityseeker_ros.core.infra.files import EpisodeLog
from cityseeker_ros.core.infra.group_commit import GroupCommitLog

WRITER = """
import sys
from cityseeker_ros.core.infra.group_commit import GroupCommitLog
log = GroupCommitLog(sys.argv[1], max_records=int(sys.argv[2]), max_delay_s=0.01)
for i in range(100000):
    log.append({"episode_id": str(i), "seed": 0, "pad": "x" * (i % 300)})
    print(len(log.records), flush=True)  # acknowledged: fsynced and reported done
"""


def test_records_are_done_only_once_their_batch_is_written(tmp_path):
    log = GroupCommitLog(tmp_path / "e.jsonl", max_records=3, max_delay_s=60)
    log.append({"episode_id": "a", "seed": 0})
    log.append({"episode_id": "b", "seed": 0})
    assert log.records == [] and (tmp_path / "e.jsonl").read_bytes() == b""
    log.append({"episode_id": "c", "seed": 0})  # the third fills the batch: one write
    assert [r["episode_id"] for r in log.records] == ["a", "b", "c"]
    log.append({"episode_id": "d", "seed": 0})
    log.close()  # close writes what is queued
    assert [r["episode_id"] for r in EpisodeLog(tmp_path / "e.jsonl").records] == ["a", "b", "c", "d"]


def test_a_queued_record_reaches_the_disk_within_the_delay(tmp_path):
    log = GroupCommitLog(tmp_path / "e.jsonl", max_records=1000, max_delay_s=0.05)
    try:
        waits = []
        for n in range(1, 6):
            start = time.monotonic()
            log.append({"episode_id": str(n), "seed": 0})
            while len(log.records) < n and time.monotonic() < start + 10:
                time.sleep(0.001)
            waits.append(time.monotonic() - start)
        assert len(log.records) == 5 and max(waits) < 2.0, waits
    finally:
        log.close()


def test_a_writer_killed_at_random_instants_loses_nothing_acknowledged(tmp_path):
    """SIGKILL the writer at 20 random instants; the file must hold, in order and whole, at least
    every record it had reported done. Counts failed trials (must be 0)."""
    rng, failures, kills = random.Random(15), 0, 0
    for trial in range(20):
        path = tmp_path / f"t{trial}.jsonl"
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(rng.choice([1, 8, 64]))],
                                stdout=subprocess.PIPE, text=True)
        acknowledged = 0
        deadline = time.monotonic() + rng.uniform(0.3, 1.5)
        while time.monotonic() < deadline:
            acknowledged = int(proc.stdout.readline() or acknowledged)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
        records = EpisodeLog(path).records  # cuts a torn last line
        in_order = [r["episode_id"] for r in records] == [str(i) for i in range(len(records))]
        failures += not (in_order and len(records) >= acknowledged > 0)
        json.dumps(records)
    assert kills == 20 and failures == 0
