"""NED/FRD <-> ENU/FLU (REP 103) and yaw conventions, checked on known vectors and random rotations."""
import math

import numpy as np
import pytest

from cityseeker_ros.core.vehicles.airsim.frames import (
    IDENTITY,
    Quaternion,
    compass_to_enu_yaw,
    compass_to_ned_yaw,
    enu_flu_to_ned_frd,
    enu_to_ned,
    enu_yaw_to_compass,
    enu_yaw_to_ned_yaw,
    flu_to_frd,
    frd_to_flu,
    ned_frd_to_enu_flu,
    ned_to_enu,
    ned_yaw_to_compass,
    ned_yaw_to_enu_yaw,
    quat_from_yaw,
    quat_multiply,
    quat_normalize,
    quat_to_matrix,
    wrap_pi,
    yaw_from_quat,
)

T_WORLD = np.array([[0, 1, 0], [1, 0, 0], [0, 0, -1]], float)  # NED -> ENU, written out by hand
T_BODY = np.diag([1.0, -1.0, -1.0])  # FRD <-> FLU


def random_quats(n: int, seed: int = 0) -> list[Quaternion]:
    q = np.random.default_rng(seed).normal(size=(n, 4))
    return [quat_normalize(Quaternion(*row)) for row in q]


def same_rotation(a: Quaternion, b: Quaternion) -> bool:
    return np.allclose(quat_to_matrix(a), quat_to_matrix(b), atol=1e-12)


@pytest.mark.parametrize("ned, enu", [
    ((1, 0, 0), (0, 1, 0)),  # north
    ((0, 1, 0), (1, 0, 0)),  # east
    ((0, 0, 1), (0, 0, -1)),  # down
    ((3.5, -2.0, -10.0), (-2.0, 3.5, 10.0)),  # 10 m up, north-west
])
def test_known_vectors(ned, enu):
    assert np.allclose(ned_to_enu(ned), enu)
    assert np.allclose(enu_to_ned(enu), ned)


def test_vectors_round_trip_and_batch():
    v = np.random.default_rng(1).normal(size=(50, 3))
    assert np.allclose(enu_to_ned(ned_to_enu(v)), v)
    assert np.allclose(ned_to_enu(v), v @ T_WORLD.T)


def test_body_frd_to_flu_per_rep103():
    # forward stays forward; right becomes -left; down becomes -up
    assert np.allclose(frd_to_flu((1, 0, 0)), (1, 0, 0))
    assert np.allclose(frd_to_flu((0, 1, 0)), (0, -1, 0))
    assert np.allclose(frd_to_flu((0, 0, 1)), (0, 0, -1))
    v = np.random.default_rng(2).normal(size=(10, 3))
    assert np.allclose(flu_to_frd(frd_to_flu(v)), v)


@pytest.mark.parametrize("ned_yaw, enu_yaw", [
    (0.0, math.pi / 2),  # facing north
    (math.pi / 2, 0.0),  # facing east
    (math.pi, -math.pi / 2),  # facing south
    (-math.pi / 2, -math.pi),  # facing west ([-pi, pi) keeps -pi)
    (math.radians(30), math.radians(60)),
])
def test_ned_yaw_to_enu_yaw(ned_yaw, enu_yaw):
    assert wrap_pi(ned_yaw_to_enu_yaw(ned_yaw) - enu_yaw) == pytest.approx(0.0, abs=1e-12)
    assert wrap_pi(enu_yaw_to_ned_yaw(enu_yaw) - ned_yaw) == pytest.approx(0.0, abs=1e-12)


def test_compass_east_is_ned_half_pi_and_enu_zero():
    assert compass_to_ned_yaw(90.0) == pytest.approx(math.pi / 2)
    assert compass_to_enu_yaw(90.0) == pytest.approx(0.0, abs=1e-12)
    assert compass_to_enu_yaw(0.0) == pytest.approx(math.pi / 2)
    assert compass_to_ned_yaw(270.0) == pytest.approx(-math.pi / 2)
    assert ned_yaw_to_compass(-math.pi / 2) == pytest.approx(270.0)
    assert enu_yaw_to_compass(math.pi) == pytest.approx(270.0)


@pytest.mark.parametrize("heading", [0.0, 0.25, 45.0, 89.999, 90.0, 179.5, 180.0, 270.0, 359.99, 360.0, 725.0, -30.0])
def test_compass_round_trips(heading):
    expected = heading % 360.0
    for back in (ned_yaw_to_compass(compass_to_ned_yaw(heading)), enu_yaw_to_compass(compass_to_enu_yaw(heading))):
        assert 0.0 <= back < 360.0
        assert min(abs(back - expected), 360.0 - abs(back - expected)) < 1e-9


def test_level_north_facing_attitude_is_enu_yaw_half_pi():
    q = ned_frd_to_enu_flu(IDENTITY)  # AirSim identity: nose north, level
    assert yaw_from_quat(q) == pytest.approx(math.pi / 2)
    assert same_rotation(q, quat_from_yaw(math.pi / 2))


@pytest.mark.parametrize("yaw_deg", [-170, -90, -30, 0, 10, 90, 135, 180])
def test_yaw_only_attitudes_follow_the_yaw_rule(yaw_deg):
    yaw = math.radians(yaw_deg)
    q = ned_frd_to_enu_flu(quat_from_yaw(yaw))
    assert same_rotation(q, quat_from_yaw(ned_yaw_to_enu_yaw(yaw)))


def test_random_rotations_match_matrix_definition_and_round_trip():
    for q in random_quats(200):
        r_enu = quat_to_matrix(ned_frd_to_enu_flu(q))
        assert np.allclose(r_enu, T_WORLD @ quat_to_matrix(q) @ T_BODY, atol=1e-12)
        assert same_rotation(enu_flu_to_ned_frd(ned_frd_to_enu_flu(q)), q)


def test_random_rotations_move_body_vectors_consistently():
    """A body vector seen in the world must be the same arrow whichever convention computed it."""
    rng = np.random.default_rng(3)
    for q in random_quats(50, seed=4):
        v_frd = rng.normal(size=3)
        world_from_ned = ned_to_enu(quat_to_matrix(q) @ v_frd)
        world_from_enu = quat_to_matrix(ned_frd_to_enu_flu(q)) @ frd_to_flu(v_frd)
        assert np.allclose(world_from_ned, world_from_enu)


def test_nose_up_pitch_points_up_in_enu():
    pitch = math.radians(20)  # positive pitch about FRD's right axis raises the nose
    q = Quaternion(math.cos(pitch / 2), 0.0, math.sin(pitch / 2), 0.0)
    forward_enu = quat_to_matrix(ned_frd_to_enu_flu(q)) @ np.array([1.0, 0.0, 0.0])
    assert np.allclose(forward_enu, [0.0, math.cos(pitch), math.sin(pitch)])  # north and up


def test_quat_multiply_composes_like_matrices():
    a, b = random_quats(2, seed=5)
    assert np.allclose(quat_to_matrix(quat_multiply(a, b)), quat_to_matrix(a) @ quat_to_matrix(b))


def test_wrap_pi():
    assert wrap_pi(math.pi) == pytest.approx(-math.pi)
    assert wrap_pi(3 * math.pi / 2) == pytest.approx(-math.pi / 2)
    assert wrap_pi(-0.1) == pytest.approx(-0.1)
