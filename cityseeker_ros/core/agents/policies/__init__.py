"""Policies by name. Importing this package registers the built-in ones (the VLM policy and
its backends included; their heavy libraries load only when a backend is made)."""
from cityseeker_ros.core.agents import vlm  # noqa: F401  (registers the vlm policy, its backends and the seed agents)
from cityseeker_ros.core.agents.policies import (  # noqa: F401  (register)  # noqa: F401  (register)
    baselines,
    landmark_oracle,
    landmark_seeker,
    ocr_embed,
    question_baselines,
    question_readers,
    sign_oracle,
)
from cityseeker_ros.core.agents.policies.base import POLICIES, Policy, make_policy

__all__ = ["POLICIES", "Policy", "make_policy"]
