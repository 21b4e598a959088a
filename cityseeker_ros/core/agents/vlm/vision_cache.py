"""Vision-tower outputs kept by image content, so that a view is encoded once: by the stop call and
the choice call of one step, at every revisit of a node, and across the episodes of a batch.

The key is a hash of the image's pixels (dtype, shape and bytes) and of the settings that decide
what the tower sees (the checkpoint, the processor's pixel limits and normalisation): a hit
returns exactly the features a fresh encoding would (the tower handles each image on its own),
without preprocessing the image again. The memory is bounded in bytes; when a new entry does not
fit, the least recently used entries are dropped (an entry larger than the bound is not kept).
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np


@dataclass(frozen=True)
class EncodedImage:
    grid_thw: tuple[int, int, int]  # the image's patch grid, which fixes its token count
    features: Any  # torch tensor (tokens, hidden) on the model's device

    @property
    def nbytes(self) -> int:
        return int(self.features.numel() * self.features.element_size())


def content_key(image: np.ndarray, settings: str) -> bytes:
    """16 bytes naming these pixels as seen under these settings."""
    array = np.ascontiguousarray(image)
    h = hashlib.blake2b(settings.encode(), digest_size=16)
    h.update(f"{array.dtype.str}{array.shape}".encode())
    h.update(array.tobytes())
    return h.digest()


class VisionCache:
    def __init__(self, max_bytes: int) -> None:
        if max_bytes <= 0:
            raise ValueError(f"vision cache: max_bytes must be positive, got {max_bytes}")
        self.max_bytes = int(max_bytes)
        self._entries: OrderedDict[bytes, EncodedImage] = OrderedDict()
        self.bytes = 0
        self.hits = self.misses = self.evictions = 0

    def get(self, key: bytes) -> Optional[EncodedImage]:
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry

    def put(self, key: bytes, entry: EncodedImage) -> None:
        if key in self._entries or entry.nbytes > self.max_bytes:
            return
        while self._entries and self.bytes + entry.nbytes > self.max_bytes:
            _, old = self._entries.popitem(last=False)
            self.bytes -= old.nbytes
            self.evictions += 1
        self._entries[key] = entry
        self.bytes += entry.nbytes

    def __len__(self) -> int:
        return len(self._entries)
