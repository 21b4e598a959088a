"""The vision cache's bound and counters, on plain tensors."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cityseeker_ros.core.agents.vlm.vision_cache import EncodedImage, VisionCache, content_key  # noqa: E402


def entry(tokens: int) -> EncodedImage:
    return EncodedImage((1, 2, tokens * 2), torch.zeros(tokens, 8))  # 32 bytes a token


def test_the_least_recently_used_entry_goes_first_and_the_bytes_stay_bounded():
    cache = VisionCache(max_bytes=3 * 32 * 10)
    for key in (b"a", b"b", b"c"):
        cache.put(key, entry(10))
    assert cache.get(b"a") is not None  # a is now the most recent; b the oldest
    cache.put(b"d", entry(10))
    assert cache.get(b"b") is None and cache.get(b"c") is not None and cache.get(b"d") is not None
    assert cache.bytes == 3 * 320 <= cache.max_bytes and cache.evictions == 1
    assert (cache.hits, cache.misses) == (3, 1)
    cache.put(b"big", entry(31))  # larger than the whole bound: not kept, nothing dropped for it
    assert cache.get(b"big") is None and len(cache) == 3


def test_the_key_names_the_pixels_and_the_settings():
    image = np.zeros((4, 6, 3), np.uint8)
    assert content_key(image, "s") == content_key(image.copy(), "s")
    assert content_key(image, "s") != content_key(image, "t")  # other pixel limits, another checkpoint
    other = image.copy()
    other[0, 0, 0] = 1
    assert content_key(other, "s") != content_key(image, "s")
    assert content_key(image.reshape(6, 4, 3), "s") != content_key(image, "s")  # same bytes, other shape
