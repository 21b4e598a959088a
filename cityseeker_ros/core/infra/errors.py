"""Errors a user can act on. The CLI prints them as one line, never a traceback."""
from __future__ import annotations

from pathlib import Path


class CitySeekerError(Exception):
    """Base for every error caused by input or configuration rather than a bug."""


class ConfigError(CitySeekerError):
    """A parameter, option or name the user gave is wrong."""


class DataError(CitySeekerError):
    """A data file is malformed; the message names the file, record and field."""

    def __init__(self, file: str | Path, message: str, record: int | None = None,
                 field: str | None = None) -> None:
        self.file = str(file)
        self.record = record
        self.field = field
        self.detail = message
        where = [self.file]
        if record is not None:
            where.append(f"record {record}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(": ".join(where + [message]))
