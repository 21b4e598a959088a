"""Name -> factory registries, so configs pick policies, datasets and backends by name."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from cityseeker_ros.core.infra.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """A named table of factories; an unknown name fails listing the known ones."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def decorate(entry: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._entries[name] = entry
            return entry
        return decorate

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "(none)"
            raise ConfigError(f"unknown {self.kind} '{name}'; known: {known}") from None

    def create(self, name: str, *args: Any, **params: Any) -> Any:
        """Make the entry `name` with configuration `params` (after fixed `args`, such as the world
        a view source draws). A parameter the entry does not take fails naming the entry; values
        are left out of the message, since some (API keys) must not reach logs."""
        factory = self.get(name)
        try:
            return factory(*args, **params)  # type: ignore[operator]
        except TypeError as exc:  # an unknown or missing keyword from config
            raise ConfigError(f"{self.kind} '{name}': bad parameters {sorted(params)}: {exc}") from None

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries
