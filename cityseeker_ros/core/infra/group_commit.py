"""episodes.jsonl with group commits, so the process that writes results is not what limits a
parallel run: one write() and one fsync per batch of records instead of per record.

A record counts as done (it is in `records`, which summaries and resume read) only once the batch
holding it is fsynced. A batch is written when `max_records` are queued, when the oldest queued
record has waited `max_delay_s` (a background flusher: a slow run never holds a finished record
for long), and at `flush`/`close`. A killed process loses at most the queued records, which were
never reported done and are run again on resume; a torn last line is cut off as before.
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Optional

from cityseeker_ros.core.infra.files import EpisodeLog
from cityseeker_ros.core.infra.text import clean_json

MAX_RECORDS = 64
MAX_DELAY_S = 0.2


class GroupCommitLog(EpisodeLog):
    def __init__(self, path: Path, max_records: int = MAX_RECORDS, max_delay_s: float = MAX_DELAY_S) -> None:
        super().__init__(path)
        self.max_records, self.max_delay_s = max_records, max_delay_s
        self._queued: list[tuple[dict, bytes]] = []
        self._oldest = 0.0
        self._state = threading.Condition()  # guards the queue
        self._io = threading.Lock()  # one batch on its way to the disk at a time, in order
        self._error: Optional[BaseException] = None
        self._closing = False
        self._flusher = threading.Thread(target=self._flush_when_due, name="episodes-flusher", daemon=True)
        self._flusher.start()

    def append(self, record: dict) -> None:
        record = clean_json(record)
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8")
        with self._state:
            self._raise_flusher_error()
            if not self._queued:
                self._oldest = time.monotonic()
                self._state.notify()
            self._queued.append((record, line))
            full = len(self._queued) >= self.max_records
        if full:
            self.flush()

    def flush(self) -> None:
        """Write and fsync everything queued; then it is in `records`."""
        with self._io:
            with self._state:
                batch, self._queued = self._queued, []
            if not batch:
                return
            data = b"".join(line for _, line in batch)
            written = os.write(self._fd, data)
            if written != len(data):
                raise OSError(f"{self.path}: short write ({written} of {len(data)} bytes)")
            os.fsync(self._fd)
            with self._state:
                self.records.extend(record for record, _ in batch)

    def _flush_when_due(self) -> None:
        while True:
            with self._state:
                while not self._closing and (not self._queued or
                                             time.monotonic() < self._oldest + self.max_delay_s):
                    wait = None if not self._queued else self._oldest + self.max_delay_s - time.monotonic()
                    self._state.wait(wait)
                if self._closing:
                    return
            try:
                self.flush()
            except BaseException as exc:  # reported by the next append or close
                with self._state:
                    self._error = exc
                return

    def _raise_flusher_error(self) -> None:
        if self._error is not None:
            raise OSError(f"{self.path}: writing results failed: {self._error}") from self._error

    def close(self) -> None:
        with self._state:
            self._closing = True
            self._state.notify()
        self._flusher.join()
        try:
            if self._fd >= 0:
                self._raise_flusher_error()
                self.flush()
        finally:
            super().close()
