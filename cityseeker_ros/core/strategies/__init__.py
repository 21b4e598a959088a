"""The paper's BCR strategies and the policy wrapper that applies them. Importing this package registers B1-B3, C1-C2
and R1-R3."""
from cityseeker_ros.core.strategies import backtracking, cognitive_map, retrieval  # noqa: F401  (register)
from cityseeker_ros.core.strategies.base import STRATEGIES, Strategy, make_strategy, parse_strategy
from cityseeker_ros.core.strategies.bcr_policy import BcrPolicy

__all__ = ["STRATEGIES", "Strategy", "BcrPolicy", "make_strategy", "parse_strategy"]
