"""Collects data problems: loading stops at the first error, `validate` gathers them all."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from cityseeker_ros.core.infra.errors import DataError

log = logging.getLogger("cityseeker_ros.data")


@dataclass(frozen=True)
class Problem:
    severity: str  # "error" or "warning"
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.message}"


@dataclass
class Problems:
    strict: bool = True
    items: list[Problem] = field(default_factory=list)

    def error(self, file: str | Path, message: str, record: int | str | None = None,
              field: str | None = None) -> None:
        err = DataError(file, message, record, field)
        if self.strict:
            raise err
        self.items.append(Problem("error", str(err)))

    def warning(self, message: str) -> None:
        log.warning(message)
        self.items.append(Problem("warning", message))

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.items if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.items if p.severity == "warning"]
