"""A recorded trace replayed through several backends side by side: request by request, each variant
in turn (so a noisy machine slows them alike), then per decision (a step's stop and choice calls and
retries together), with the tokens of each variant compared with the first's.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional

from cityseeker_ros.core.agents.vlm.backend import Backend, Generation, GenerationRequest


@dataclass
class Variant:
    name: str
    generations: list[Generation] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # wall time of each request

    def phase_mean(self, phase: str, among: Optional[Sequence[int]] = None) -> Optional[float]:
        """Mean seconds of `phase` (preprocess, vision, prefill, decode) per request, over `among`
        (indices; all by default); None where the backend does not split it."""
        picked = [self.generations[i] for i in among] if among is not None else self.generations
        values = [getattr(g.latency, f"{phase}_s") for g in picked]
        return None if not values or any(v is None for v in values) else statistics.fmean(values)  # type: ignore

    def vision_hit_rate(self) -> Optional[float]:
        uses = [g.cache for g in self.generations if g.cache is not None]
        seen = sum(u.vision_hits + u.vision_misses for u in uses)
        return None if not uses or not seen else sum(u.vision_hits for u in uses) / seen

    def prefix_share(self) -> Optional[float]:
        """Of all prompt tokens, the share whose keys and values were reused."""
        uses = [(g.cache, g.prompt_tokens) for g in self.generations if g.cache is not None]
        total = sum(n or 0 for _, n in uses)
        return None if not uses or not total else sum(u.prefix_tokens for u, _ in uses) / total

    def compiling(self) -> list[int]:
        """Indices of the requests that compiled the decode step."""
        return [i for i, g in enumerate(self.generations) if g.cache is not None and g.cache.compiled]


def replay(requests: Sequence[GenerationRequest], backends: dict[str, Backend]) -> list[Variant]:
    """Every request through every backend, in trace order, one at a time."""
    variants = [Variant(name) for name in backends]
    for request in requests:
        for variant, backend in zip(variants, backends.values()):
            started = time.perf_counter()
            variant.generations.append(backend.generate([request])[0])
            variant.seconds.append(time.perf_counter() - started)
    return variants


def differing(reference: Variant, other: Variant) -> list[int]:
    """Indices of the requests whose reply tokens differ (text where a backend gives no tokens)."""
    def reply(g: Generation) -> object:
        return g.token_ids if g.token_ids is not None else g.text
    return [i for i, (a, b) in enumerate(zip(reference.generations, other.generations)) if reply(a) != reply(b)]
