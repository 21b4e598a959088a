"""SqliteMemoryStore on real files: exact round trips, key isolation, crash restarts, a SIGKILLed
writer, concurrent forked writers and a spawned worker that receives the store by pickle."""
from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cityseeker_ros.core.agents.memory import (
    DecisionMemory,
    EdgeMemory,
    MemoryKey,
    RoundMemory,
    SqliteMemoryStore,
    Visit,
)
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.geodesy import destination

ROOT = Path(__file__).resolve().parents[4]
KEY = MemoryKey("run-1", "ep-1", 0)


def visits_of(r: int, n: int = 3) -> list[Visit]:
    return [Visit(r, s, f"n{r}.{s}", 22.3 + r * 1e-4 + s * 1e-5, 114.17 + s * 1e-5, (90.0 * s) % 360) for s in range(n)]


def play_round(store: SqliteMemoryStore, key: MemoryKey, r: int, finish: bool = True) -> RoundMemory:
    """Write a round with three visits, decisions and edges; its contents depend only on r."""
    store.begin_round(key, r)
    for v in visits_of(r):
        store.add_visit(key, v)
        store.add_decision(key, DecisionMemory(r, v.step, v.node, v.step, 90.0, "ahead", 0.5, f"r{r}", "decide"))
        store.add_edge(key, EdgeMemory(r, v.step, v.node, f"n{r}.{v.step + 1}", 90.0))
    memory = RoundMemory(r, tuple(v.node for v in visits_of(r)), (0, 1, None), "stop", {"round": r})
    if finish:
        store.end_round(key, memory)
    return memory


@pytest.fixture
def store(tmp_path):
    s = SqliteMemoryStore(tmp_path / "memory.sqlite")
    yield s
    s.close()


def test_every_record_type_round_trips_exactly(store):
    visit = Visit(2, 7, "节点-ü", 22.123456789012345, -0.1 - 0.2, 359.99999999999994)
    decisions = [
        DecisionMemory(2, 7, "节点-ü", None, None, None, None, "", "retrace"),
        DecisionMemory(2, 8, "b", 3, 1e-300, "left", 0.1 + 0.2,
                       "左转 — café ☕\n'x\"; DROP TABLE visits;--", "decide"),
    ]
    edge_none = EdgeMemory(2, 7, "节点-ü", "b", None, "taken")
    edge = EdgeMemory(2, 8, "b", "c", 123.456789012345678, "backtracked")
    memory = RoundMemory(2, ("节点-ü", "b", "c"), (3, None, 0), "max_steps",
                         {"score": 0.1 + 0.2, "ü": None, "nested": {"list": [1, 2.5, "x"]}, "big": 2**53 + 1})
    store.begin_round(KEY, 2)
    store.add_visit(KEY, visit)
    for d in decisions:
        store.add_decision(KEY, d)
    store.add_edge(KEY, edge_none)
    store.add_edge(KEY, edge)
    store.end_round(KEY, memory)

    assert store.visits(KEY) == [visit]
    assert store.decisions(KEY) == decisions
    assert store.edges(KEY) == [edge_none, edge]
    assert store.finished_rounds(KEY) == [memory]
    got = store.finished_rounds(KEY)[0]
    assert type(got.path) is tuple and type(got.actions) is tuple
    assert type(store.visits(KEY)[0].facing) is float


def test_reads_come_in_round_step_order_and_filter_by_round(store):
    for r in (0, 1, 2):
        play_round(store, KEY, r)
    store.add_visit(KEY, Visit(2, 0, "late-same-step", 0.0, 0.0, 0.0))  # insertion order breaks the tie
    assert store.visits(KEY) == visits_of(0) + visits_of(1) + visits_of(2)[:1] + [
        Visit(2, 0, "late-same-step", 0.0, 0.0, 0.0)] + visits_of(2)[1:]
    assert store.visits(KEY, rounds=[2, 0]) == [v for v in store.visits(KEY) if v.round in (0, 2)]
    assert [d.round for d in store.decisions(KEY, rounds=[1])] == [1, 1, 1]
    assert [e.step for e in store.edges(KEY, rounds=(1,))] == [0, 1, 2]
    assert store.visits(KEY, rounds=[]) == []
    assert store.visits(KEY, rounds=[9]) == []


def test_keys_isolate_runs_episodes_and_seeds(store):
    keys = [KEY, MemoryKey("run-2", "ep-1", 0), MemoryKey("run-1", "ep-2", 0), MemoryKey("run-1", "ep-1", 1)]
    for i, key in enumerate(keys):
        store.begin_round(key, 0)
        store.add_visit(key, Visit(0, 0, f"only-{i}", 0.0, 0.0, 0.0))
        store.add_decision(key, DecisionMemory(0, 0, f"only-{i}", i, None, None, None))
        store.add_edge(key, EdgeMemory(0, 0, f"only-{i}", "x", None))
        store.end_round(key, RoundMemory(0, (f"only-{i}",)))
    for i, key in enumerate(keys):
        assert store.visits(key) == [Visit(0, 0, f"only-{i}", 0.0, 0.0, 0.0)]
        assert store.visits_near(key, 0.0, 0.0, 10.0) == [Visit(0, 0, f"only-{i}", 0.0, 0.0, 0.0)]
        assert store.decisions(key) == [DecisionMemory(0, 0, f"only-{i}", i, None, None, None)]
        assert store.edges(key) == [EdgeMemory(0, 0, f"only-{i}", "x", None)]
        assert store.finished_rounds(key) == [RoundMemory(0, (f"only-{i}",))]
    assert store.visits(MemoryKey("run-3", "ep-1", 0)) == []

    store.begin_round(keys[1], 0)  # a restart of one episode leaves the others alone
    store.forget(keys[2])
    assert store.visits(keys[1]) == [] and store.finished_rounds(keys[1]) == []
    assert store.visits(keys[2]) == [] and store.finished_rounds(keys[2]) == []
    assert store.visits(KEY) == [Visit(0, 0, "only-0", 0.0, 0.0, 0.0)]
    assert store.visits(keys[3]) == [Visit(0, 0, "only-3", 0.0, 0.0, 0.0)]
    assert len(store.finished_rounds(keys[3])) == 1


def test_unfinished_round_is_readable_but_not_finished(store):
    first = play_round(store, KEY, 0)
    play_round(store, KEY, 1, finish=False)
    assert store.finished_rounds(KEY) == [first]
    assert store.visits(KEY) == visits_of(0) + visits_of(1)
    assert [d.round for d in store.decisions(KEY)] == [0, 0, 0, 1, 1, 1]
    assert [e.round for e in store.edges(KEY)] == [0, 0, 0, 1, 1, 1]


def test_begin_round_clears_the_crashed_round_and_later_ones_only(store):
    finished = [play_round(store, KEY, r) for r in range(3)]
    play_round(store, KEY, 3, finish=False)  # the crash happened in round 3
    store.begin_round(KEY, 2)  # the runner resumes from round 2
    assert store.finished_rounds(KEY) == finished[:2]
    assert store.visits(KEY) == visits_of(0) + visits_of(1)
    assert {d.round for d in store.decisions(KEY)} == {0, 1}
    assert {e.round for e in store.edges(KEY)} == {0, 1}
    again = play_round(store, KEY, 2)
    assert store.finished_rounds(KEY) == finished[:2] + [again]
    assert store.visits(KEY) == visits_of(0) + visits_of(1) + visits_of(2)


def test_mark_edges_changes_only_the_given_steps_of_the_round(store):
    play_round(store, KEY, 0)
    play_round(store, KEY, 1, finish=False)
    store.mark_edges(KEY, 1, [0, 2], "backtracked")
    store.mark_edges(KEY, 1, [], "backtracked")
    outcomes = [(e.round, e.step, e.outcome) for e in store.edges(KEY)]
    assert outcomes == [(0, 0, "taken"), (0, 1, "taken"), (0, 2, "taken"),
                        (1, 0, "backtracked"), (1, 1, "taken"), (1, 2, "backtracked")]


@pytest.mark.parametrize("lat0, lon0", [(22.3, 114.17), (-33.9, 18.4), (70.0, 25.0), (0.0, 179.9997), (0.0, -179.9997)])
def test_visits_near_keeps_the_radius_and_sorts_nearest_first(store, lat0, lon0):
    def at(r, s, name, azimuth, metres):
        lat, lon = destination(lat0, lon0, azimuth, metres)
        lon = (lon + 180.0) % 360.0 - 180.0  # the stored convention, across the antimeridian too
        return Visit(r, s, name, lat, lon, 0.0)

    tie_late = at(1, 3, "tie-late", 45.0, 10.0)
    tie_early = Visit(0, 7, "tie-early", tie_late.lat, tie_late.lon, 0.0)  # the same spot, earlier
    inside = [at(0, 0, "d5", 200.0, 5.0), tie_early, tie_late, at(1, 0, "d30", 90.0, 30.0),
              at(1, 1, "d49.7ne", 45.0, 49.7), at(0, 1, "d49.8s", 180.0, 49.8), at(0, 2, "d49.9w", 270.0, 49.9)]
    outside = [at(0, 3, "d50.1", 0.0, 50.1), at(1, 2, "d50.1e", 90.0, 50.1), at(0, 4, "far", 135.0, 5000.0)]
    for v in outside + inside[::-1]:  # stored out of order on purpose
        store.add_visit(KEY, v)

    got = store.visits_near(KEY, lat0, lon0, 50.0)
    assert got == inside
    assert [v.node for v in store.visits_near(KEY, lat0, lon0, 50.0, rounds=[1])] == [
        "tie-late", "d30", "d49.7ne"]
    assert store.visits_near(KEY, lat0, lon0, 1.0) == []
    assert len(store.visits_near(KEY, lat0, lon0, 6000.0)) == len(inside) + len(outside)


def test_visits_near_orders_equal_distances_by_round_then_step(store):
    for r, s in [(2, 0), (0, 5), (1, 1), (0, 2)]:
        store.add_visit(KEY, Visit(r, s, f"{r}.{s}", 22.3, 114.17, 0.0))
    assert [v.node for v in store.visits_near(KEY, 22.3, 114.17, 1.0)] == ["0.2", "0.5", "1.1", "2.0"]


def test_file_survives_close_and_reopen(tmp_path):
    path = tmp_path / "memory.sqlite"
    first = SqliteMemoryStore(path)
    finished = [play_round(first, KEY, r) for r in range(2)]
    play_round(first, KEY, 2, finish=False)
    first.close()

    second = SqliteMemoryStore(str(path))
    assert second.finished_rounds(KEY) == finished
    assert second.visits(KEY) == visits_of(0) + visits_of(1) + visits_of(2)
    assert len(second.decisions(KEY)) == len(second.edges(KEY)) == 9
    second.close()
    assert first.visits(KEY, rounds=[1]) == visits_of(1)  # a closed store reopens on use
    first.close()


def test_memory_path_works_in_process():
    s = SqliteMemoryStore(":memory:")
    finished = play_round(s, KEY, 0)
    assert s.finished_rounds(KEY) == [finished]
    s.close()


WRITER = """
import sys
from cityseeker_ros.core.agents.memory import MemoryKey, RoundMemory, SqliteMemoryStore, Visit
store = SqliteMemoryStore(sys.argv[1])
key = MemoryKey("run", "ep", 0)
r = 0
while True:
    store.begin_round(key, r)
    for s in range(6):
        store.add_visit(key, Visit(r, s, f"n{r}.{s}", 1e-5 * r, 1e-5 * s, 0.5 * s))
        print(r, s, flush=True)
    store.end_round(key, RoundMemory(r, tuple(f"n{r}.{s}" for s in range(6)), (r, None), "stop", {"r": r}))
    r += 1
"""


def written_visits(r: int) -> list[Visit]:
    return [Visit(r, s, f"n{r}.{s}", 1e-5 * r, 1e-5 * s, 0.5 * s) for s in range(6)]


def test_a_killed_writer_leaves_every_finished_round_intact(tmp_path):
    path = tmp_path / "memory.sqlite"
    errors = tmp_path / "writer.err"
    with open(errors, "w") as err:
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        for r in range(26):  # until round 25 is under way: three of its visits are committed
            for s in range(6 if r < 25 else 3):
                line = proc.stdout.readline()
                assert line == f"{r} {s}\n", errors.read_text()
        time.sleep(0.05)  # let it write on, so the kill lands at an arbitrary point of its loop
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL

    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    raw.close()
    store = SqliteMemoryStore(path)
    key = MemoryKey("run", "ep", 0)
    finished = store.finished_rounds(key)
    n = len(finished)
    assert n >= 25
    assert finished == [RoundMemory(r, tuple(f"n{r}.{s}" for s in range(6)), (r, None), "stop", {"r": r})
                        for r in range(n)]
    expected = [v for r in range(n) for v in written_visits(r)]
    in_progress = store.visits(key, rounds=[n])  # kept until the restart clears it
    assert store.visits(key) == expected + in_progress
    assert in_progress == written_visits(n)[:len(in_progress)]
    if n == 25:
        assert len(in_progress) >= 3
    store.begin_round(key, n)  # the restart
    assert store.visits(key) == expected
    assert store.finished_rounds(key) == finished
    store.close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    raw.close()


def _write_episode(store: SqliteMemoryStore, worker: int) -> None:
    """20 rounds of 1 begin + 8 visits + 1 end: 200 writes under this worker's own episode."""
    key = MemoryKey("run", f"ep-{worker}", 0)
    for r in range(20):
        store.begin_round(key, r)
        for s in range(8):
            store.add_visit(key, Visit(r, s, f"w{worker}.{r}.{s}", 0.0, 0.0, 0.0))
        store.end_round(key, RoundMemory(r, (f"w{worker}.{r}",)))


def test_forked_processes_write_one_file_concurrently(tmp_path):
    store = SqliteMemoryStore(tmp_path / "memory.sqlite")  # the parent's connection is open at fork
    play_round(store, KEY, 0)
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_write_episode, args=(store, i)) for i in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0, 0, 0]

    for i in range(4):
        key = MemoryKey("run", f"ep-{i}", 0)
        assert store.finished_rounds(key) == [RoundMemory(r, (f"w{i}.{r}",)) for r in range(20)]
        assert store.visits(key) == [Visit(r, s, f"w{i}.{r}.{s}", 0.0, 0.0, 0.0) for r in range(20) for s in range(8)]
    assert store.visits(KEY) == visits_of(0)  # the parent's own connection still works
    play_round(store, KEY, 1)
    assert len(store.finished_rounds(KEY)) == 2
    store.close()


def _use_in_child(store: SqliteMemoryStore, queue) -> None:
    queue.put([m.round for m in store.finished_rounds(KEY)])
    play_round(store, KEY, 1)
    store.close()


def test_the_store_pickles_without_its_connection_and_works_in_a_spawned_worker(store):
    play_round(store, KEY, 0)
    clone = pickle.loads(pickle.dumps(store))
    assert clone.path == store.path and clone._db is None
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_use_in_child, args=(store, queue))
    child.start()
    seen = queue.get(timeout=120)
    child.join(timeout=120)
    assert child.exitcode == 0 and seen == [0]
    assert [m.round for m in store.finished_rounds(KEY)] == [0, 1]
    assert clone.visits(KEY) == visits_of(0) + visits_of(1)
    clone.close()


def test_a_text_file_is_a_config_error_naming_it(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("these are not the memories you are looking for\n" * 50)
    with pytest.raises(ConfigError, match="notes.txt"):
        SqliteMemoryStore(path)


def test_another_schema_version_is_a_config_error_naming_the_file(tmp_path):
    path = tmp_path / "old.sqlite"
    SqliteMemoryStore(path).close()
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE meta SET value = '99' WHERE name = 'schema_version'")
    raw.close()
    with pytest.raises(ConfigError, match=r"old\.sqlite.*schema version 99"):
        SqliteMemoryStore(path)


def test_a_foreign_sqlite_database_or_missing_folder_is_a_config_error(tmp_path):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE t (x)")
    raw.close()
    with pytest.raises(ConfigError, match="other.sqlite"):
        SqliteMemoryStore(path)
    with pytest.raises(ConfigError, match="no-such-folder"):
        SqliteMemoryStore(tmp_path / "no-such-folder" / "m.sqlite")


RACE_FILES, RACE_PROCESSES = 100, 4


def _open_fresh_files_in_step(paths: list[str], barrier, results) -> None:
    """Open each fresh file right behind a barrier shared by every racer, at a random instant
    0-2 ms after it, write one round and report what went wrong (None: nothing)."""
    import random

    rng = random.Random(os.getpid())
    failures = []
    for path in paths:
        barrier.wait(timeout=120)
        time.sleep(rng.uniform(0.0, 0.002))
        try:
            store = SqliteMemoryStore(path)
            mode = store._connection().execute("PRAGMA journal_mode").fetchone()[0]
            play_round(store, MemoryKey("run", f"ep-{os.getpid()}", 0), 0)
            store.close()
            if mode != "wal":
                failures.append(f"{path}: journal mode {mode}")
        except Exception as exc:  # every kind counts as a failure of the race
            failures.append(f"{path}: {exc!r}")
    results.put(failures)


def test_processes_creating_one_fresh_file_at_the_same_instant_all_open_it(tmp_path):
    """4 spawned processes race on each of 100 fresh files: no open may fail."""
    paths = [str(tmp_path / f"race-{i}.sqlite") for i in range(RACE_FILES)]
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(RACE_PROCESSES), ctx.Queue()
    racers = [ctx.Process(target=_open_fresh_files_in_step, args=(paths, barrier, results))
              for _ in range(RACE_PROCESSES)]
    for p in racers:
        p.start()
    failures = [f for _ in racers for f in results.get(timeout=600)]
    for p in racers:
        p.join(timeout=60)
    assert [p.exitcode for p in racers] == [0] * RACE_PROCESSES
    assert failures == [], f"{len(failures)} failed opens in {RACE_FILES} trials: {failures[:3]}"
    for path in paths:  # the schema was made once, whoever won
        with sqlite3.connect(path) as raw:
            assert raw.execute("SELECT name, value FROM meta").fetchall() == [("schema_version", "1")]
            assert raw.execute("SELECT COUNT(*) FROM rounds").fetchone() == (RACE_PROCESSES,)
        raw.close()


def _open_and_report(path: str, barrier, results) -> None:
    barrier.wait(timeout=120)
    try:
        SqliteMemoryStore(path).close()
        results.put("opened")
    except ConfigError as exc:
        results.put(str(exc))


def test_racing_opens_of_another_schema_version_all_name_the_version(tmp_path):
    path = tmp_path / "old.sqlite"
    SqliteMemoryStore(path).close()
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE meta SET value = '99' WHERE name = 'schema_version'")
    raw.close()
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(RACE_PROCESSES), ctx.Queue()
    racers = [ctx.Process(target=_open_and_report, args=(str(path), barrier, results)) for _ in range(RACE_PROCESSES)]
    for p in racers:
        p.start()
    answers = [results.get(timeout=120) for _ in racers]
    for p in racers:
        p.join(timeout=60)
    assert all("schema version 99" in a and "old.sqlite" in a for a in answers), answers


def test_a_file_locked_past_the_bound_is_a_config_error_naming_it(tmp_path, monkeypatch):
    import cityseeker_ros.core.agents.memory.sqlite_store as sqlite_store

    path = tmp_path / "held.sqlite"
    SqliteMemoryStore(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process mid-write, for longer than the bound
    monkeypatch.setattr(sqlite_store, "OPEN_TIMEOUT_S", 0.3)
    started = time.monotonic()
    try:
        with pytest.raises(ConfigError, match=r"held\.sqlite.*locked by another process after 0.3 s"):
            SqliteMemoryStore(path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert 0.3 <= time.monotonic() - started < 5.0
    SqliteMemoryStore(path).close()  # released: opens again
