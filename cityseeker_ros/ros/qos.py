"""QoS per kind of topic (docs/ros_interfaces.md has the table and the reasons)."""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

# Episode state, view sets, decisions, actions, poses: the newest value is what matters, it
# must arrive, and a node that starts (or restarts) late must get it at once.
STATE = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                   durability=DurabilityPolicy.TRANSIENT_LOCAL)


def view_images(max_views: int) -> QoSProfile:
    """The images of one view set: a burst of up to `max_views` frames that together form one
    observation. Keeping one view set's worth means a slow decision node always finds the
    newest complete set and never a backlog; reliable and transient-local for the same reasons
    as STATE (a restarted decision node must see the images of the view set it answers)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=max(1, int(max_views)),
                      reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


# Live camera frames into a slow consumer: only the newest frame is worth anything.
CAMERA = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT,
                    durability=DurabilityPolicy.VOLATILE)

# /diagnostics as diagnostic_aggregator and rqt expect it.
DIAGNOSTICS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)

# Finished tasks for the evaluator: none may be lost, and an evaluator that starts or restarts
# late must still get every one (it skips those it already wrote), so history is deep.
OUTCOMES = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10_000, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)

# The supervisor's heartbeat: only its arrival matters, a late one is worthless.
HEARTBEAT = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT,
                       durability=DurabilityPolicy.VOLATILE)

# /estop: it must arrive, and a node that starts or restarts late must get the last value at once
# (a bridge restarted while the button is still down trips again).
ESTOP = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                   durability=DurabilityPolicy.TRANSIENT_LOCAL)
# A transient-local subscription does not match a volatile publisher (a plain `ros2 topic pub
# /estop std_msgs/Bool`), so every listener subscribes with this one as well.
ESTOP_VOLATILE = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                            durability=DurabilityPolicy.VOLATILE)
