"""Name -> factory registries, so configs pick policies, datasets and backends by name."""
from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from typing import Any, Generic, Optional, TypeVar

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
        self._check_names(name, factory, len(args), params)
        try:
            return factory(*args, **params)  # type: ignore[operator]
        except TypeError as exc:  # a missing keyword from config, or a factory without a signature
            raise ConfigError(f"{self.kind} '{name}': bad parameters {sorted(params)}: {exc}") from None

    def parameters(self, name: str, fixed: int = 0) -> Optional[list[str]]:
        """The keyword parameters the entry `name` takes after `fixed` positional ones, in its
        order; None when it takes any (**kwargs) or has no readable signature."""
        try:
            signature = inspect.signature(self.get(name))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        taken = [p for p in signature.parameters.values() if p.kind is not p.VAR_POSITIONAL]
        if any(p.kind is p.VAR_KEYWORD for p in taken):
            return None
        return [p.name for p in taken[fixed:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                and not p.name.startswith("_")]

    def _check_names(self, name: str, factory: T, fixed: int, params: dict[str, Any]) -> None:
        """A misspelt parameter is named, with the close ones and every one the entry takes, not
        with Python's `__init__() got an unexpected keyword argument`."""
        known = self.parameters(name, fixed)
        unknown = [] if known is None else [k for k in params if k not in known]
        if not unknown:
            return
        close = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(f"{self.kind} '{name}': bad parameters {sorted(params)}: no parameter "
                          f"{', '.join(repr(k) for k in unknown)}{hint}; it takes: {', '.join(known) or 'none'}")

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries
