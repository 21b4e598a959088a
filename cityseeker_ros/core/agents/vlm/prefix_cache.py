"""The KV caches of recent prompts, so that a prompt sharing its beginning with one prefilled before
(the system prompt and the step's header, shared by the stop and the choice calls, by every step
and by the episodes of a batch) prefills only the rest.

A prompt is keyed by its content token by token: the token ids, with each image's tokens standing
for that image's hash (the same placeholder ids carry other pixels in another view). Attention is
causal, so the keys and values of the first n positions depend only on those n tokens: reusing
them gives the same model state as prefilling them again. The store holds the `entries` most
recently used prompts; a new one drops the least recently used.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np


@dataclass(eq=False)  # entries are told apart by identity
class _Entry:
    keys: np.ndarray  # int64, one per prompt token
    cache: Any  # a transformers DynamicCache holding at least len(keys) positions


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


class PrefixCache:
    """`new_cache()` makes an empty KV cache of the model's kind (a transformers DynamicCache)."""

    def __init__(self, entries: int, new_cache: Callable[[], Any]) -> None:
        if entries < 1:
            raise ValueError(f"prefix cache: entries must be >= 1, got {entries}")
        self.entries = int(entries)
        self._new_cache = new_cache
        self._store: list[_Entry] = []  # most recently used last

    def take(self, keys: np.ndarray) -> tuple[int, Optional[Any]]:
        """(n, a copy of the cache cut to n positions) for the stored prompt sharing the longest
        beginning with `keys`, leaving at least one token to prefill; (0, None) when none shares any."""
        best, length = None, 0
        for entry in self._store:
            n = common_prefix(entry.keys, keys)
            if n > length:
                best, length = entry, n
        length = min(length, len(keys) - 1)
        if best is None or length <= 0:
            return 0, None
        self._store.remove(best)
        self._store.append(best)
        return length, self._copy(best.cache, length)

    def _copy(self, cache: Any, length: int) -> Any:
        """A new cache holding the first `length` positions of `cache` (the stored one stays as it is)."""
        copy = self._new_cache()
        for index, layer in enumerate(cache.layers):
            copy.update(layer.keys[:, :, :length].clone(), layer.values[:, :, :length].clone(), index)
        return copy

    def put(self, keys: np.ndarray, cache: Any) -> None:
        """Keep `cache` (its first len(keys) positions are this prompt's; later ones are ignored)."""
        self._store = [e for e in self._store if not np.array_equal(e.keys, keys)]
        self._store.append(_Entry(np.array(keys, dtype=np.int64), cache))
        del self._store[:-self.entries]
