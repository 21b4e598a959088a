"""The one interface every VLM backend implements: chat requests with images in, text out.

Backends know nothing about navigation; the VLM policy builds the prompts and parses the
replies. A request is a list of messages whose content interleaves text and RGB images, the
shape every chat-template VLM and every OpenAI-compatible server accepts.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np

from cityseeker_ros.core.infra.errors import CitySeekerError
from cityseeker_ros.core.infra.registry import Registry

Content = Union[str, np.ndarray]  # text, or an RGB uint8 image (H, W, 3)


class BackendError(CitySeekerError):
    """The model could not answer (server down, timeout, out of memory): the episode ends
    with end reason `error` and the run goes on."""


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: tuple[Content, ...]


@dataclass(frozen=True)
class GenerationRequest:
    messages: tuple[Message, ...]
    max_new_tokens: int = 512
    temperature: float = 0.0  # greedy by default: benchmark runs must repeat
    json_schema: Optional[dict[str, Any]] = None  # ask for JSON output where the backend supports it

    @property
    def images(self) -> list[np.ndarray]:
        return [c for m in self.messages for c in m.content if isinstance(c, np.ndarray)]


@dataclass(frozen=True)
class Latency:
    """Seconds of one request (a batch's requests each report the batch's). A local backend also
    splits its work: vision (preprocessing and encoding images), prefill and decode; None where
    a backend cannot tell (a server)."""

    preprocess_s: float = 0.0  # images and template -> model inputs (or request body)
    generate_s: float = 0.0  # the model, or the round trip to the server
    vision_s: Optional[float] = None
    prefill_s: Optional[float] = None  # up to the first new token
    decode_s: Optional[float] = None


@dataclass(frozen=True)
class CacheUse:
    """What a request found already done (the local backend's fast path)."""

    vision_hits: int = 0  # images whose encoding was reused
    vision_misses: int = 0  # images encoded for this request
    prefix_tokens: int = 0  # prompt tokens whose keys and values were reused
    compiled: bool = False  # this request compiled the decode step


@dataclass(frozen=True)
class Generation:
    text: str
    latency: Latency = field(default_factory=Latency)
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    token_ids: Optional[tuple[int, ...]] = None  # the reply's tokens, where the backend has them
    cache: Optional[CacheUse] = None


class Backend(ABC):
    name: str = ""

    @abstractmethod
    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """One generation per request, in order; a backend may batch them. Raises BackendError."""

    def describe(self) -> dict[str, Any]:
        """Model, dtype, quantisation, endpoint: written next to results."""
        return {"name": self.name}

    def close(self) -> None:  # noqa: B027 - stateless backends hold nothing
        """Release the model or the connection pool."""


BackendFactory = Callable[..., Backend]
BACKENDS: Registry[BackendFactory] = Registry("VLM backend")


def make_backend(name: str, **params: Any) -> Backend:
    """A backend by registry name; unknown names and bad parameters fail at start-up."""
    return BACKENDS.create(name, **params)
