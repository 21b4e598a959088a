"""A message time as the wire carries it (builtin_interfaces/Time): whole seconds and
nanoseconds, so a stamp read back from a message is equal to the one sent."""
from __future__ import annotations

from dataclasses import dataclass

NS = 1_000_000_000


@dataclass(frozen=True)
class Stamp:
    sec: int
    nanosec: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.nanosec < NS:
            raise ValueError(f"nanosec must be in [0, {NS}), got {self.nanosec}")

    @classmethod
    def from_ns(cls, ns: int) -> Stamp:
        return cls(sec=ns // NS, nanosec=ns % NS)

    @classmethod
    def from_seconds(cls, seconds: float) -> Stamp:
        return cls.from_ns(round(seconds * NS))

    @property
    def seconds(self) -> float:
        return self.sec + self.nanosec * 1e-9
