"""A built world's fingerprint: what it was built from, so a rebuild from the same inputs is skipped.

A world build takes minutes; `make demo` reruns it each time. The fingerprint names every input
that changes what is written (the OSM extract's sha256, the build parameters, the package version
and the builder and format versions) and the sha256 of every file written. It is written last and
atomically, after the folder is swapped in: a build that crashed leaves no fingerprint for its
inputs, and a file changed or cut short since then no longer matches, so neither is taken as up to
date.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from cityseeker_ros.core.infra.errors import DataError
from cityseeker_ros.core.infra.files import sha256_file, write_json_atomic
from cityseeker_ros.core.infra.jsonfile import read_json_file

FINGERPRINT_FILE = "build-fingerprint.json"
FINGERPRINT_VERSION = 1  # bump when the fingerprint's own layout changes


def inputs_digest(inputs: dict[str, Any]) -> str:
    """sha256 of the inputs as canonical JSON (sorted keys): equal inputs, equal digest."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class UpToDate:
    """A world folder that already holds what these inputs would build."""

    path: Path
    built_at: str  # UTC, ISO 8601, when the fingerprint was written

    def message(self) -> str:
        return f"world up to date ({self.path}), built {self.built_at}; nothing to do"


def write_fingerprint(folder: Path, inputs: dict[str, Any], clock: Any = time.time) -> None:
    """Record `inputs` and the sha256 of every file now in `folder`; call it after the last write."""
    folder = Path(folder)
    files = {p.name: sha256_file(p) for p in sorted(folder.iterdir())
             if p.is_file() and p.name != FINGERPRINT_FILE and not p.name.startswith(".")}
    write_json_atomic(folder / FINGERPRINT_FILE, {
        "fingerprint_version": FINGERPRINT_VERSION,
        "inputs_sha256": inputs_digest(inputs),
        "inputs": inputs,
        "files": files,
        "built_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(clock())),
    })


def up_to_date(folder: Path, inputs: dict[str, Any]) -> Optional[UpToDate]:
    """The folder's record when it was built from exactly `inputs` and every file it wrote is
    still there with the same bytes; None otherwise (no fingerprint, other inputs, a file missing,
    changed or added)."""
    folder = Path(folder)
    path = folder / FINGERPRINT_FILE
    if not path.is_file():
        return None
    try:
        record = read_json_file(path)
    except DataError:
        return None  # unreadable: rebuild, which rewrites it
    if not isinstance(record, dict) or record.get("fingerprint_version") != FINGERPRINT_VERSION \
            or record.get("inputs_sha256") != inputs_digest(inputs) or not isinstance(record.get("files"), dict):
        return None
    present = {p.name for p in folder.iterdir()
               if p.is_file() and p.name != FINGERPRINT_FILE and not p.name.startswith(".")}
    if present != set(record["files"]):
        return None
    for name, digest in record["files"].items():
        if sha256_file(folder / name) != digest:
            return None
    return UpToDate(folder, str(record.get("built_at", "at an unknown time")))
