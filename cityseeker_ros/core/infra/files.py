"""Crash-safe result files: append-only JSONL for episodes, atomic replace for the rest.

Every writer here cleans its text first (core/infra/text.py): a lone surrogate from a model reply or
a data file becomes U+FFFD instead of failing the write, and what is read back is clean too.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.infra.text import clean_json, clean_text

log = logging.getLogger("cityseeker_ros.results")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_json_atomic(path: Path, data: Any) -> None:
    """Write to a temporary sibling, fsync, then rename: readers see the old or the new file."""
    write_text_atomic(path, json.dumps(clean_json(data), indent=2, sort_keys=False) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes owner-only files; results are meant to be shared
        with os.fdopen(fd, "wb") as f:
            f.write(clean_text(text).encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class EpisodeLog:
    """episodes.jsonl: each record is one write() of a whole line followed by fsync, so a
    killed run leaves at most a torn last line, which the next open cuts off."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.records: list[dict] = self._recover()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _recover(self) -> list[dict]:
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        records, good_end = [], 0
        for lineno, line in enumerate(data.split(b"\n"), start=1):
            end = good_end + len(line) + 1
            if end > len(data):  # no newline: a torn final write
                if line.strip():
                    log.warning("%s: dropping an incomplete last line from an interrupted run", self.path)
                break
            try:
                records.append(clean_json(json.loads(line)))
            except json.JSONDecodeError as exc:
                raise DataError(self.path, f"line {lineno} is not valid JSON ({exc.msg}); "
                                           "the file was edited or corrupted") from None
            good_end = end
        if good_end < len(data):
            with open(self.path, "r+b") as f:
                f.truncate(good_end)
        return records

    def append(self, record: dict) -> None:
        record = clean_json(record)
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8")
        written = os.write(self._fd, line)
        if written != len(line):  # regular files do not short-write in practice; never half-log
            raise OSError(f"{self.path}: short write ({written} of {len(line)} bytes)")
        os.fsync(self._fd)
        self.records.append(record)

    def extend(self, records: Iterable[dict]) -> None:
        for r in records:
            self.append(r)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> EpisodeLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_replaceable(out_dir: Path, replaceable: Callable[[Path], bool], what: str) -> None:
    """Refuse to overwrite anything but an earlier output of the same writer."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir}: exists and is not a folder; refusing to overwrite it")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not replaceable(out_dir):
        raise ConfigError(f"{out_dir}: folder is not empty and is not {what}; "
                          "refusing to overwrite it (choose another folder)")


def folder_json_text(doc: Any) -> str:
    """A document as replace_folder writes it: a file rewritten alone later (world tasks) must come
    out byte for byte as the folder's writer made it, or a fingerprint of the folder breaks."""
    return json.dumps(clean_json(doc), indent=1, ensure_ascii=False) + "\n"


def replace_folder(out_dir: Path, documents: dict[str, Any], replaceable: Callable[[Path], bool],
                   what: str) -> None:
    """Write JSON documents into a hidden sibling, then swap it in: a crash leaves the old
    folder or none, never a half-written one."""
    out_dir = Path(out_dir)
    check_replaceable(out_dir, replaceable, what)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    old = None
    try:
        for name, doc in documents.items():
            with open(tmp / name, "wb") as f:
                f.write(folder_json_text(doc).encode("utf-8"))
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700
        if out_dir.exists():
            check_replaceable(out_dir, replaceable, what)  # it may have changed while we worked
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
            os.replace(out_dir, old / "folder")
        os.replace(tmp, out_dir)
    except BaseException:
        if old is not None and not out_dir.exists():
            os.replace(old / "folder", out_dir)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
