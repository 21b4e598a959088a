"""The live episode: it begins when the vehicle reaches the task's start, the path is where the
vehicle arrived (not where it was sent), and it ends on stop, budget or failure like the replay."""
from __future__ import annotations

from cityseeker_ros.core.environment import BACK, STOP, EndReason, move, retrace
from cityseeker_ros.core.supervisor.live import LiveEpisode


def test_nodes_passed_on_the_way_to_the_start_are_not_steps():
    live = LiveEpisode("s", max_steps=5)
    assert not live.arrive("x") and not live.arrive("y") and live.trajectory is None
    assert live.arrive("s") and live.trajectory.path == ["s"] and live.steps == 0


def test_the_path_is_where_the_vehicle_arrived_and_a_stop_ends_it():
    live = LiveEpisode("s", max_steps=5)
    live.arrive("s")
    live.act(move(2))
    assert not live.arrive("s")  # still there: no step
    assert live.arrive("b")  # the action meant some node; the vehicle reached b
    live.act(retrace("s"))
    assert live.arrive("s")
    live.act(STOP)
    assert live.done and live.trajectory.end_reason is EndReason.STOPPED
    assert live.trajectory.path == ["s", "b", "s"] and live.trajectory.headings == [2, BACK, None]
    assert not live.arrive("c")  # nothing counts after the end


def test_the_budget_ends_it_at_the_node_reached_with_the_last_step():
    live = LiveEpisode("s", max_steps=2)
    live.arrive("s")
    live.act(move(0))
    live.arrive("a")
    live.act(move(1))
    live.arrive("b")
    assert live.done and live.trajectory.end_reason is EndReason.BUDGET_EXHAUSTED and live.steps == 2


def test_a_failure_ends_it_with_the_error():
    live = LiveEpisode("s", max_steps=2)
    live.arrive("s")
    live.fail("the decision node failed")
    assert live.done and live.trajectory.end_reason is EndReason.ERROR
    assert live.trajectory.error == "the decision node failed"
