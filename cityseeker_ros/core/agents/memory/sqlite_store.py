"""The embedded memory backend: one SQLite file that several worker processes share.

Every write is its own short committed transaction, so a killed process loses at most the round it
was in, and the file stays valid (WAL journal). Each process opens its own connection on first
use: SQLite connections must never cross a fork, and the object pickles without one.
"""
from __future__ import annotations

import json
import math
import os
import random
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.memory.store import (
    DecisionMemory,
    EdgeMemory,
    MemoryKey,
    MemoryStore,
    RoundMemory,
    Visit,
)
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.text import clean_json, clean_text
from cityseeker_ros.core.streets.geodesy import pairwise_geodesic_m

SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 60.0  # workers queue on the write lock rather than fail
OPEN_TIMEOUT_S = 60.0  # the bound on opening (and creating) a file other processes hold
_FIRST_RETRY_S, _LAST_RETRY_S = 0.002, 0.2  # pauses between attempts to open, doubling
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)

_KEY = "run TEXT NOT NULL, episode TEXT NOT NULL, seed INTEGER NOT NULL, round INTEGER NOT NULL"
_KEY_WHERE = "run = ? AND episode = ? AND seed = ?"
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rounds (
    {_KEY}, finished INTEGER NOT NULL DEFAULT 0,
    path TEXT, actions TEXT, end_reason TEXT, extra TEXT,
    PRIMARY KEY (run, episode, seed, round));
CREATE TABLE IF NOT EXISTS visits (
    {_KEY}, step INTEGER NOT NULL, node TEXT NOT NULL,
    lat REAL NOT NULL, lon REAL NOT NULL, facing REAL NOT NULL);
CREATE INDEX IF NOT EXISTS visits_by_round ON visits (run, episode, seed, round, step);
CREATE INDEX IF NOT EXISTS visits_by_lat ON visits (run, episode, seed, lat);
CREATE TABLE IF NOT EXISTS decisions (
    {_KEY}, step INTEGER NOT NULL, node TEXT NOT NULL, action INTEGER, heading REAL,
    relative TEXT, confidence REAL, rationale TEXT NOT NULL, kind TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS decisions_by_round ON decisions (run, episode, seed, round, step);
CREATE TABLE IF NOT EXISTS edges (
    {_KEY}, step INTEGER NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL,
    heading REAL, outcome TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS edges_by_round ON edges (run, episode, seed, round, step);
"""
_TABLES = ("rounds", "visits", "decisions", "edges")
# Lower bounds of the WGS84 length of one degree, so the bounding box never cuts off a true hit.
_MIN_M_PER_DEG_LAT = 110_500.0
_MIN_M_PER_DEG_LON_AT_EQUATOR = 111_300.0

# Connections inherited through fork are kept referenced, never closed or garbage-collected:
# closing one in the child can checkpoint or unlock the parent's file under it.
_INHERITED: list[sqlite3.Connection] = []


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    """Another connection holds the lock (worth a retry), as opposed to a missing folder and the like."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY_CODES  # extended codes such as SQLITE_BUSY_RECOVERY included
    return "locked" in str(exc) or "busy" in str(exc)


def _key(key: MemoryKey) -> tuple[str, str, int]:
    return key.run, key.episode, key.seed


def _clean_params(params: Sequence[Any]) -> list[Any]:
    return [clean_text(p) if isinstance(p, str) else p for p in params]


class _CleanText:
    """A connection whose text parameters are cleaned (core/infra/text.py): SQLite encodes UTF-8 and
    fails on a lone surrogate (model text, data), and a memory write must not fail on text."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, _clean_params(params))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        return self._db.executemany(sql, (_clean_params(r) for r in rows))


def _rounds_filter(rounds: Optional[Sequence[int]]) -> tuple[str, list[int]]:
    """SQL condition and parameters selecting `rounds` (None: every round)."""
    if rounds is None:
        return "", []
    rounds = [int(r) for r in rounds]
    return f" AND round IN ({', '.join('?' * len(rounds))})", rounds


def _bounding_box(lat: float, lon: float, radius_m: float) -> tuple[str, list[float]]:
    """A SQL condition that keeps every point within `radius_m` of (lat, lon) and few others."""
    dlat = radius_m / _MIN_M_PER_DEG_LAT
    sql, params = " AND lat BETWEEN ? AND ?", [lat - dlat, lat + dlat]
    cos_far = math.cos(math.radians(min(90.0, abs(lat) + dlat)))
    if cos_far <= 1e-9:
        return sql, params  # the circle reaches a pole: every longitude qualifies
    dlon = radius_m / (_MIN_M_PER_DEG_LON_AT_EQUATOR * cos_far)
    if dlon >= 180.0:
        return sql, params
    lo, hi = lon - dlon, lon + dlon
    if lo < -180.0:  # the box wraps across the antimeridian
        return sql + " AND (lon >= ? OR lon <= ?)", params + [lo + 360.0, hi]
    if hi > 180.0:
        return sql + " AND (lon >= ? OR lon <= ?)", params + [lo, hi - 360.0]
    return sql + " AND lon BETWEEN ? AND ?", params + [lo, hi]


class SqliteMemoryStore(MemoryStore):
    """Memory in one SQLite file (or ":memory:", private to one process and lost on close).

    The file is checked when the store is made, so a wrong path fails at start-up. Pickling keeps
    only the path; each process (a forked or spawned worker included) opens its own connection.
    Durability is against a killed process, not a power cut (WAL with synchronous=NORMAL).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._db: Optional[sqlite3.Connection] = None
        self._pid: Optional[int] = None
        self._lock = threading.RLock()
        self._adopt()
        self._connection()

    # --- connection handling ---------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self._db, self._pid, self._lock = None, None, threading.RLock()

    def _adopt(self) -> None:
        """In a new process (first use, or a forked child) start without the parent's connection
        and lock: the lock may have been held by a thread that does not exist here."""
        if self._pid != os.getpid():
            if self._db is not None:
                _INHERITED.append(self._db)
            self._db, self._pid, self._lock = None, os.getpid(), threading.RLock()

    def _connection(self) -> sqlite3.Connection:
        """This process's connection, opened on first use; the caller holds `_lock`."""
        if self._db is None:
            self._db = self._open()
        return self._db

    def _open(self) -> sqlite3.Connection:
        """Open and prepare a connection, waiting at most OPEN_TIMEOUT_S for other processes.

        Processes that create a fresh file at the same instant race on the journal-mode switch,
        and SQLite answers some of those lock conflicts with SQLITE_BUSY at once instead of
        calling the busy handler (it would deadlock). So the whole preparation is retried with
        a growing, jittered pause until the deadline; every step of it is idempotent."""
        deadline = time.monotonic() + OPEN_TIMEOUT_S
        pause = _FIRST_RETRY_S
        while True:
            try:
                return self._try_open(max(0.0, deadline - time.monotonic()))
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise ConfigError(f"memory store '{self.path}': cannot open: {exc}") from None
                if time.monotonic() + pause > deadline:
                    raise ConfigError(f"memory store '{self.path}': still locked by another process after "
                                      f"{OPEN_TIMEOUT_S:g} s ({exc})") from None
            time.sleep(pause * random.uniform(0.5, 1.0))
            pause = min(2 * pause, _LAST_RETRY_S)

    def _try_open(self, timeout_s: float) -> sqlite3.Connection:
        """One attempt; a busy or locked file raises sqlite3.OperationalError (the caller retries)."""
        db = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
        try:
            # The busy handler must be in place before the first statement that takes a lock.
            db.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
            if self.path != ":memory:":
                db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            self._check_schema(db)
            # Later writes queue on the lock for the full time, whatever was left of the open's.
            db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        except sqlite3.OperationalError:
            db.close()
            raise
        except sqlite3.DatabaseError as exc:
            db.close()
            raise ConfigError(f"memory store '{self.path}' is not a SQLite database: {exc}") from None
        except BaseException:
            db.close()
            raise
        return db

    def _check_schema(self, db: sqlite3.Connection) -> None:
        db.execute("BEGIN IMMEDIATE")
        try:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "meta" not in tables:
                raise ConfigError(f"memory store '{self.path}' is a SQLite database of something else "
                                  f"(tables: {', '.join(sorted(tables))})")
            if tables:
                row = db.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
                found = row[0] if row else None
                if found != str(SCHEMA_VERSION):
                    raise ConfigError(f"memory store '{self.path}' has schema version {found}; "
                                      f"this code reads version {SCHEMA_VERSION}")
            else:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT INTO meta (name, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    @contextmanager
    def _write(self) -> Iterator[_CleanText]:
        """One short transaction that takes the write lock up front (no busy lock upgrades)."""
        self._adopt()
        with self._lock:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                yield _CleanText(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[Any]) -> list[tuple]:
        self._adopt()
        with self._lock:
            return self._connection().execute(sql, _clean_params(params)).fetchall()

    def close(self) -> None:
        """Close this process's connection; the next call opens a new one."""
        self._adopt()
        with self._lock:
            if self._db is not None:
                self._db.close()
            self._db = None

    # --- writes ------------------------------------------------------------------------------

    def begin_round(self, key: MemoryKey, round: int) -> None:
        with self._write() as db:
            for table in _TABLES:
                db.execute(f"DELETE FROM {table} WHERE {_KEY_WHERE} AND round >= ?", (*_key(key), round))
            db.execute("INSERT INTO rounds (run, episode, seed, round) VALUES (?, ?, ?, ?)", (*_key(key), round))

    def add_visit(self, key: MemoryKey, visit: Visit) -> None:
        with self._write() as db:
            db.execute("INSERT INTO visits (run, episode, seed, round, step, node, lat, lon, facing) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (*_key(key), visit.round, visit.step, visit.node, visit.lat, visit.lon, visit.facing))

    def add_decision(self, key: MemoryKey, decision: DecisionMemory) -> None:
        d = decision
        with self._write() as db:
            db.execute("INSERT INTO decisions (run, episode, seed, round, step, node, action, heading, relative, "
                       "confidence, rationale, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (*_key(key), d.round, d.step, d.node, d.action, d.heading, d.relative, d.confidence,
                        d.rationale, d.kind))

    def add_edge(self, key: MemoryKey, edge: EdgeMemory) -> None:
        e = edge
        with self._write() as db:
            db.execute("INSERT INTO edges (run, episode, seed, round, step, source, target, heading, outcome) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (*_key(key), e.round, e.step, e.source, e.target, e.heading, e.outcome))

    def mark_edges(self, key: MemoryKey, round: int, steps: Sequence[int], outcome: str) -> None:
        with self._write() as db:
            db.executemany(f"UPDATE edges SET outcome = ? WHERE {_KEY_WHERE} AND round = ? AND step = ?",
                           [(outcome, *_key(key), round, int(step)) for step in steps])

    def end_round(self, key: MemoryKey, memory: RoundMemory) -> None:
        m = memory
        path, actions = json.dumps(clean_json(list(m.path))), json.dumps(clean_json(list(m.actions)))
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO rounds (run, episode, seed, round, finished, path, actions, "
                       "end_reason, extra) VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?)",
                       (*_key(key), m.round, path, actions, m.end_reason, json.dumps(clean_json(m.extra))))

    def forget(self, key: MemoryKey) -> None:
        with self._write() as db:
            for table in _TABLES:
                db.execute(f"DELETE FROM {table} WHERE {_KEY_WHERE}", _key(key))

    # --- reads -------------------------------------------------------------------------------

    def finished_rounds(self, key: MemoryKey) -> list[RoundMemory]:
        rows = self._read(f"SELECT round, path, actions, end_reason, extra FROM rounds "
                          f"WHERE {_KEY_WHERE} AND finished = 1 ORDER BY round", _key(key))
        return [RoundMemory(round=r, path=tuple(clean_json(json.loads(path))),
                            actions=tuple(clean_json(json.loads(actions))),
                            end_reason=end_reason, extra=clean_json(json.loads(extra)))
                for r, path, actions, end_reason, extra in rows]

    def visits(self, key: MemoryKey, rounds: Optional[Sequence[int]] = None) -> list[Visit]:
        where, params = _rounds_filter(rounds)
        rows = self._read(f"SELECT round, step, node, lat, lon, facing FROM visits "
                          f"WHERE {_KEY_WHERE}{where} ORDER BY round, step, rowid", (*_key(key), *params))
        return [Visit(*row) for row in rows]

    def decisions(self, key: MemoryKey, rounds: Optional[Sequence[int]] = None) -> list[DecisionMemory]:
        where, params = _rounds_filter(rounds)
        rows = self._read(f"SELECT round, step, node, action, heading, relative, confidence, rationale, kind "
                          f"FROM decisions WHERE {_KEY_WHERE}{where} ORDER BY round, step, rowid",
                          (*_key(key), *params))
        return [DecisionMemory(*row) for row in rows]

    def edges(self, key: MemoryKey, rounds: Optional[Sequence[int]] = None) -> list[EdgeMemory]:
        where, params = _rounds_filter(rounds)
        rows = self._read(f"SELECT round, step, source, target, heading, outcome FROM edges "
                          f"WHERE {_KEY_WHERE}{where} ORDER BY round, step, rowid", (*_key(key), *params))
        return [EdgeMemory(*row) for row in rows]

    def visits_near(self, key: MemoryKey, lat: float, lon: float, radius_m: float,
                    rounds: Optional[Sequence[int]] = None) -> list[Visit]:
        """Visits within `radius_m` metres (WGS84 geodesic) of a point, nearest first, ties by
        (round, step). SQL narrows to a bounding box; the exact distance is computed here."""
        if radius_m < 0:
            return []
        where, params = _rounds_filter(rounds)
        box, box_params = _bounding_box(lat, lon, radius_m)
        rows = self._read(f"SELECT round, step, node, lat, lon, facing FROM visits "
                          f"WHERE {_KEY_WHERE}{where}{box} ORDER BY round, step, rowid",
                          (*_key(key), *params, *box_params))
        if not rows:
            return []
        dist = pairwise_geodesic_m(np.array([[lat, lon]]), np.array([[r[3], r[4]] for r in rows]))[0]
        # A stable sort on distance keeps the (round, step) order of the query among ties.
        near = sorted((i for i in range(len(rows)) if dist[i] <= radius_m), key=lambda i: dist[i])
        return [Visit(*rows[i]) for i in near]
