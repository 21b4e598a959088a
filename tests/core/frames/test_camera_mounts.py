import pytest

from cityseeker_ros.core.frames.camera_mounts import parse_mounts, static_transforms
from cityseeker_ros.core.frames.transforms import TransformTree


def test_optical_frame_looks_forward_from_the_mount():
    mounts = parse_mounts([{"frame_id": "front", "xyz": [0.3, 0.0, 1.6], "rpy_deg": [0, 0, 90]}])
    tree = TransformTree()
    for t in static_transforms(mounts, "base_link"):
        tree.set(t)
    optical = tree.lookup("base_link", "front_optical")
    assert optical.translation == pytest.approx((0.3, 0.0, 1.6))
    # optical +z (the viewing direction) is the mount's forward, which is body +y (yaw 90°)
    forward = optical.apply((0.0, 0.0, 1.0))
    assert forward == pytest.approx((0.3, 1.0, 1.6), abs=1e-9)
    right = optical.apply((1.0, 0.0, 0.0))  # optical +x is image right: body -x after yaw 90°
    assert right == pytest.approx((1.3, 0.0, 1.6), abs=1e-9)


@pytest.mark.parametrize("value,match", [
    ({"frame_id": "a"}, "JSON list"),
    ([{"xyz": [0, 0, 0]}], r"cameras\[0\] needs a non-empty frame_id"),
    ([{"frame_id": "a", "xyz": [0, 0]}], r"cameras\[0\].xyz must be three"),
    ([{"frame_id": "a", "rpy_deg": [0, 0, float("nan")]}], r"rpy_deg must be three finite"),
    ([{"frame_id": "a", "fov": 90}], "unknown keys"),
    ([{"frame_id": "a"}, {"frame_id": "a"}], r"cameras\[1\]: frame_id 'a' appears twice"),
])
def test_bad_mounts_name_the_entry(value, match):
    with pytest.raises(ValueError, match=match):
        parse_mounts(value)


def test_a_camera_named_like_the_body_is_refused():
    with pytest.raises(ValueError, match="clashes"):
        static_transforms(parse_mounts([{"frame_id": "base_link"}]), "base_link")
