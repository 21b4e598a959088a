import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.streets.directions import RelativeDirection as R
from cityseeker_ros.core.tasks.environment import STOP, EndReason, Environment, move


def test_views_carry_absolute_heading_and_correct_labels(tiny_world):
    env = Environment(tiny_world)
    obs = env.reset(tiny_world.episodes[0])
    assert obs.node == "00000000" and obs.facing == 90.0 and obs.steps_left == 35
    obs = env.step(move(0)).observation  # A -> B, now facing east
    assert obs.node == "00000001" and obs.facing == 90.0
    assert [(v.heading, v.relative) for v in obs.views] == [(270.0, R.BACK), (90.0, R.FRONT), (0.0, R.LEFT)]


def test_stop_ends_once_with_full_path(tiny_world):
    env = Environment(tiny_world)
    env.reset(tiny_world.episodes[0])
    for _ in range(3):
        env.step(move(1) if env.observe().node == "00000001" else move(0))
    assert env.trajectory.path == ["00000000", "00000001", "00000002", "00000001"]
    result = env.step(STOP)
    assert result.done and result.end_reason is EndReason.STOPPED
    assert env.trajectory.path[-1] == "00000001" and env.trajectory.headings == [0, 1, 0, None]
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(STOP)


def test_budget_ends_at_the_last_allowed_move(tiny_world):
    env = Environment(tiny_world, max_steps=3)
    env.reset(tiny_world.episodes[0])
    results = [env.step(move(0)) for _ in range(3)]
    assert [r.done for r in results] == [False, False, True]
    assert results[-1].end_reason is EndReason.BUDGET_EXHAUSTED
    assert env.trajectory.steps == 3 and env.trajectory.path[-1] == "00000001"


def test_invalid_actions_are_retried_then_end_the_episode(tiny_world):
    env = Environment(tiny_world, max_invalid_retries=2)
    env.reset(tiny_world.episodes[0])
    first = env.step(move(7))
    assert not first.valid and not first.done and "choose 0..0" in first.observation.feedback
    env.step(move(0))  # a valid action resets the count
    assert env.observe().feedback is None
    outcomes = [env.step(move(-1)) for _ in range(3)]
    assert [o.done for o in outcomes] == [False, False, True]
    assert outcomes[-1].end_reason is EndReason.INVALID_ACTION
    assert env.trajectory.path == ["00000000", "00000001"]


def test_fail_records_error_and_keeps_path(tiny_world):
    env = Environment(tiny_world)
    env.reset(tiny_world.episodes[0])
    env.step(move(0))
    env.fail("backend timed out")
    assert env.done and env.trajectory.end_reason is EndReason.ERROR
    assert env.trajectory.error == "backend timed out" and env.trajectory.path[-1] == "00000001"


def test_reset_clears_state_between_episodes(tiny_world):
    env = Environment(tiny_world)
    env.reset(tiny_world.episodes[0])
    env.step(move(0))
    env.step(move(9))
    obs = env.reset(tiny_world.episodes[1])
    assert env.trajectory.path == ["00000000"] and obs.feedback is None and obs.facing == 90.0


def test_bad_settings_are_config_errors(tiny_world):
    with pytest.raises(ConfigError, match="max_steps"):
        Environment(tiny_world, max_steps=-1)
