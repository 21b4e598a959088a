"""The prefix store: the longest shared beginning, one token always left to prefill, copies that do
not alias the stored cache, and the bound on entries."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from cityseeker_ros.core.agents.vlm.prefix_cache import PrefixCache, common_prefix  # noqa: E402


def filled(length: int, value: float = 1.0):
    cache = transformers.DynamicCache()
    for layer in range(2):
        keys = torch.arange(length, dtype=torch.float32).view(1, 1, length, 1).repeat(1, 2, 1, 4) * value
        cache.update(keys, keys + 0.5, layer)
    return cache


def test_common_prefix():
    assert common_prefix(np.array([1, 2, 3]), np.array([1, 2, 4, 5])) == 2
    assert common_prefix(np.array([1, 2]), np.array([1, 2, 3])) == 2
    assert common_prefix(np.array([7]), np.array([1])) == 0


def test_the_longest_shared_prompt_is_taken_cut_and_copied():
    store = PrefixCache(2, transformers.DynamicCache)
    store.put(np.array([1, 2, 3, 4, 5]), filled(5))
    store.put(np.array([1, 2, 9]), filled(3, 2.0))
    n, cache = store.take(np.array([1, 2, 3, 4, 7, 8]))
    assert n == 4 and cache.get_seq_length() == 4
    assert torch.equal(cache.layers[0].keys[0, 0, :, 0], torch.arange(4.0))
    cache.layers[0].keys.zero_()  # the caller's copy: the stored one is untouched
    again, copy = store.take(np.array([1, 2, 3, 4, 7]))
    assert again == 4 and torch.equal(copy.layers[0].keys[0, 0, :, 0], torch.arange(4.0))


def test_a_whole_prompt_seen_before_leaves_its_last_token_to_prefill():
    store = PrefixCache(1, transformers.DynamicCache)
    store.put(np.array([5, 6, 7]), filled(3))
    n, cache = store.take(np.array([5, 6, 7]))
    assert n == 2 and cache.get_seq_length() == 2
    assert store.take(np.array([9, 6])) == (0, None)


def test_a_new_prompt_drops_the_least_recently_used():
    store = PrefixCache(2, transformers.DynamicCache)
    store.put(np.array([1, 1]), filled(2))
    store.put(np.array([2, 2]), filled(2))
    store.take(np.array([1, 1, 3]))  # [1, 1] is used: [2, 2] is now the oldest
    store.put(np.array([3, 3]), filled(2))
    assert store.take(np.array([2, 2, 5]))[0] == 0 and store.take(np.array([1, 1, 5]))[0] == 2
