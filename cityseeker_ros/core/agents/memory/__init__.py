"""Agent memory by name: configs pick a backend with `make_memory_store("sqlite", path=...)`, so a
server database can be registered beside the embedded one without touching the strategies."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cityseeker_ros.core.agents.memory.sqlite_store import SqliteMemoryStore
from cityseeker_ros.core.agents.memory.store import (
    DecisionMemory,
    EdgeMemory,
    MemoryKey,
    MemoryStore,
    RoundMemory,
    Visit,
)
from cityseeker_ros.core.infra.registry import Registry

MEMORY_STORES: Registry[Callable[..., MemoryStore]] = Registry("memory store")
MEMORY_STORES.register("sqlite")(SqliteMemoryStore)


def make_memory_store(name: str, **params: Any) -> MemoryStore:
    return MEMORY_STORES.create(name, **params)


__all__ = [
    "MEMORY_STORES",
    "DecisionMemory",
    "EdgeMemory",
    "MemoryKey",
    "MemoryStore",
    "RoundMemory",
    "SqliteMemoryStore",
    "Visit",
    "make_memory_store",
]
