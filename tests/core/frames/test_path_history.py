import math

import pytest

from cityseeker_ros.core.frames.path_history import PathHistory, PathPose

Q = (0.0, 0.0, 0.0, 1.0)


def pose(t, x, y=0.0):
    return PathPose(t, (x, y, 0.0), Q)


def test_bounded_keeps_the_newest():
    path = PathHistory(max_poses=5, min_spacing_m=0.0)
    for i in range(100):
        path.add(pose(i, float(i)))
    assert len(path) == 5
    assert [p.position[0] for p in path.poses()] == [95.0, 96.0, 97.0, 98.0, 99.0]


def test_holding_in_place_adds_nothing_and_old_poses_are_refused():
    path = PathHistory(max_poses=10, min_spacing_m=1.0)
    assert path.add(pose(0, 0.0)) and path.add(pose(1, 5.0))
    for t in range(2, 50):
        assert not path.add(pose(t, 5.0 + 0.001 * t))
    assert len(path) == 2 and path.poses()[-1].stamp_ns == 49
    assert not path.add(pose(3, 100.0))  # older than the last: dropped
    assert path.poses()[-1].position[0] == pytest.approx(5.049)
    path.clear()
    assert len(path) == 0


@pytest.mark.parametrize("kwargs,match", [({"max_poses": 1}, "max_poses"), ({"max_poses": True}, "max_poses"),
                                          ({"min_spacing_m": -1.0}, "min_spacing_m"),
                                          ({"min_spacing_m": math.inf}, "min_spacing_m")])
def test_bad_settings_name_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PathHistory(**kwargs)


def test_a_non_finite_pose_is_refused():
    with pytest.raises(ValueError, match="not finite"):
        PathHistory().add(pose(0, math.nan))


def test_a_new_run_drops_only_the_older_poses():
    path = PathHistory(max_poses=3, min_spacing_m=0.0)
    for t in (1, 2, 10, 11):
        path.add(pose(t, float(t)))
    assert path.drop_before(10) == 1  # stamp 1 had already gone: bounded at 3
    assert [p.stamp_ns for p in path.poses()] == [10, 11]
    for t in (12, 13):
        path.add(pose(t, float(t)))
    assert len(path) == 3  # still bounded after the drop


def test_the_first_run_news_keeps_the_poses_a_late_listener_already_has():
    """The frames node joined during step 2 of a run: the latched news it gets first is stamped
    after steps 0 and 1, which are this run's (a CI failure: the path restarted at step 2)."""
    path = PathHistory(min_spacing_m=0.0)
    for t in (1, 2):
        path.add(pose(t, float(t)))
    assert path.on_run(("ep", 0, 0, 1), 3) is True
    assert path.on_run(("ep", 0, 0, 1), 4) is False  # the same run, a later step
    assert [p.stamp_ns for p in path.poses()] == [1, 2]
    path.add(pose(5, 5.0))
    assert path.on_run(("ep", 0, 0, 2), 6) is True  # a restart: the path starts again at its news
    assert path.poses() == []
    assert path.on_run(None, 7) is True and path.on_run(None, 8) is False  # idle, then still idle
