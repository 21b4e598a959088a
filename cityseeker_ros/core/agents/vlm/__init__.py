"""Vision-language models: the backend interface and registry, the built-in backends
(local transformers, OpenAI-compatible servers, the recording wrapper) and the VLM decision
policy. Importing this package registers them and the seed agents built on them (core/agents/seeds); torch and
transformers load only when a backend is made."""
from __future__ import annotations

from cityseeker_ros.core.agents.vlm import openai_backend, trace, transformers_backend  # noqa: F401  (register)
from cityseeker_ros.core.agents.vlm.backend import BACKENDS, Backend, BackendError, GenerationRequest, make_backend
from cityseeker_ros.core.agents.vlm.policy import VlmPolicy

# isort: split
# The seed papers' agents (core/agents/seeds) are built on this package: imported after it, they register.
from cityseeker_ros.core.agents import seeds  # noqa: E402,F401  (register)

__all__ = ["BACKENDS", "Backend", "BackendError", "GenerationRequest", "VlmPolicy", "make_backend"]
