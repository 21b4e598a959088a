import math

import pytest

from cityseeker_ros.core.frames.transforms import Transform, TransformTree, rpy_quaternion, yaw_quaternion


def test_compose_then_inverse_is_identity():
    t = Transform("map", "odom", (3.0, -2.0, 1.0), rpy_quaternion(0.1, -0.2, 1.3))
    u = Transform("odom", "base_link", (1.0, 2.0, 0.0), yaw_quaternion(-0.7))
    chained = t.then(u)
    back = chained.then(u.inverse())
    assert back.translation == pytest.approx(t.translation, abs=1e-9)
    assert abs(sum(a * b for a, b in zip(back.rotation, t.rotation))) == pytest.approx(1.0, abs=1e-9)
    assert chained.apply((0.0, 0.0, 0.0)) == pytest.approx(t.apply(u.translation))


def test_yaw_rotates_counter_clockwise_from_east():
    t = Transform("map", "base_link", (10.0, 0.0, 0.0), yaw_quaternion(math.pi / 2))
    assert t.apply((1.0, 0.0, 0.0)) == pytest.approx((10.0, 1.0, 0.0))  # body forward is map north
    assert t.yaw == pytest.approx(math.pi / 2)


def test_tree_looks_up_across_branches_and_both_ways():
    tree = TransformTree()
    tree.set(Transform("map", "odom", (100.0, 50.0, 0.0), yaw_quaternion(math.pi)))
    tree.set(Transform("odom", "base_link", (1.0, 0.0, 0.0)))
    tree.set(Transform("base_link", "camera", (0.2, 0.0, 1.5)))
    base = tree.lookup("map", "base_link")
    assert base.translation == pytest.approx((99.0, 50.0, 0.0))
    camera = tree.lookup("map", "camera")
    assert camera.translation == pytest.approx((98.8, 50.0, 1.5))
    reverse = tree.lookup("camera", "map")
    assert reverse.apply(camera.translation) == pytest.approx((0.0, 0.0, 0.0), abs=1e-9)
    sibling = tree.lookup("odom", "camera")
    assert sibling.translation == pytest.approx((1.2, 0.0, 1.5))


def test_tree_keeps_the_newest_and_refuses_a_second_parent_and_strangers():
    tree = TransformTree()
    tree.set(Transform("odom", "base_link", (2.0, 0.0, 0.0), stamp_ns=20))
    tree.set(Transform("odom", "base_link", (1.0, 0.0, 0.0), stamp_ns=10))  # late, older: ignored
    assert tree.lookup("odom", "base_link").translation == (2.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="second parent"):
        tree.set(Transform("map", "base_link"))
    with pytest.raises(LookupError, match="unconnected"):
        tree.lookup("odom", "elsewhere")
    with pytest.raises(ValueError, match="itself"):
        tree.lookup("odom", "odom")


@pytest.mark.parametrize("kwargs,match", [({"parent": "a", "child": "a"}, "two different"),
                                          ({"parent": "", "child": "a"}, "two different"),
                                          ({"parent": "a", "child": "b", "translation": (math.nan, 0, 0)},
                                           "not finite"),
                                          ({"parent": "a", "child": "b", "rotation": (0, 0, 0, 0)},
                                           "not a quaternion")])
def test_bad_transforms_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Transform(**kwargs)


def test_a_loop_is_found_not_followed_forever():
    tree = TransformTree()
    tree.set(Transform("a", "b"))
    tree.set(Transform("b", "c"))
    tree.set(Transform("c", "a"))
    with pytest.raises(ValueError, match="loop"):
        tree.lookup("a", "b")
