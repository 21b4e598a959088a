"""The supervisor and the paper's BCR strategies. Importing this package registers B1-B3, C1-C2
and R1-R3."""
from cityseeker_ros.core.supervisor import backtracking, cognitive_map, retrieval  # noqa: F401  (register)
from cityseeker_ros.core.supervisor.strategy import STRATEGIES, Strategy, make_strategy, parse_strategy
from cityseeker_ros.core.supervisor.supervisor import Supervisor

__all__ = ["STRATEGIES", "Strategy", "Supervisor", "make_strategy", "parse_strategy"]
