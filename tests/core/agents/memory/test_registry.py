"""Configs choose a memory backend by name; wrong names and parameters are config errors."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.agents.memory import MEMORY_STORES, MemoryKey, SqliteMemoryStore, make_memory_store
from cityseeker_ros.core.infra.errors import ConfigError


def test_sqlite_is_registered_and_made_by_name(tmp_path):
    assert MEMORY_STORES.names() == ["sqlite"]
    store = make_memory_store("sqlite", path=tmp_path / "m.sqlite")
    assert isinstance(store, SqliteMemoryStore)
    store.begin_round(MemoryKey("r", "e", 0), 0)
    store.close()
    assert (tmp_path / "m.sqlite").is_file()


def test_unknown_store_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"unknown memory store 'redis'; known: sqlite"):
        make_memory_store("redis")


def test_bad_parameters_are_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="memory store 'sqlite': bad parameters"):
        make_memory_store("sqlite", path=tmp_path / "m.sqlite", pool_size=4)
    with pytest.raises(ConfigError, match="bad parameters"):
        make_memory_store("sqlite")
