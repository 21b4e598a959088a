"""The e-stop latch on disk, so it survives a restart of the bridge and of the runner (and the same
for a pilot's takeover: the bridge keeps one beside it, see VehicleBridge).

A latched e-stop is a fact about the vehicle, not about one process: a bridge killed and started
again must not move on the next repeated goal. The file exists while the e-stop is latched and is
removed only by an explicit reset. It is written to a temporary sibling, fsynced and renamed (and
the folder fsynced), so a crash leaves the old file or the new one, never a torn one. A file that
cannot be read or parsed counts as latched (fail safe), with a log line naming it.
"""
from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Optional

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.files import write_json_atomic

log = logging.getLogger("cityseeker_ros.safety")


class LatchFile:
    def __init__(self, path: str | os.PathLike[str], what: str = "e-stop", until: str = "reset") -> None:
        """Fails now, naming the file, if its folder cannot be made or written: an e-stop that
        cannot be saved would be forgotten by the next restart."""
        self.path, self.what, self.until = Path(path), what, until
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"{what} state file {self.path}: cannot create its folder ({exc.strerror})") from None
        if not os.access(self.path.parent, os.W_OK | os.X_OK):
            raise ConfigError(f"{what} state file {self.path}: folder {self.path.parent} is not writable")

    def load(self) -> Optional[str]:
        """Why it is latched, or None when it is not (no file)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            return self._unreadable(f"cannot read it ({exc})")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            return self._unreadable(f"not JSON ({exc})")
        if not isinstance(data, dict) or data.get("latched") is not True or not isinstance(data.get("reason"), str):
            return self._unreadable('expected {"latched": true, "reason": "..."}')
        return data["reason"]

    def _unreadable(self, why: str) -> str:
        reason = f"{self.what} state file {self.path} is unreadable: {why}; latched until {self.until}"
        log.error(reason)
        return reason

    def save(self, reason: str) -> None:
        """Raises OSError when the disk refuses; the caller keeps the latch in memory regardless."""
        write_json_atomic(self.path, {"latched": True, "reason": reason, "time": time.time()})
        _fsync_dir(self.path.parent)

    def clear(self) -> None:
        """Raises OSError when the file stays (then the reset must be refused)."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return
        _fsync_dir(self.path.parent)


def _fsync_dir(folder: Path) -> None:
    """Make a rename or unlink in `folder` durable (the file's own fsync does not cover its name)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
