"""Policies by name. Importing this package registers the built-in ones."""
from cityseeker_ros.core.policies import baselines  # noqa: F401  (registers)
from cityseeker_ros.core.policies.base import POLICIES, Policy, make_policy

__all__ = ["POLICIES", "Policy", "make_policy"]
