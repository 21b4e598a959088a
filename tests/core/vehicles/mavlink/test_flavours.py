"""The numbers the link and the simulator share, held against the autopilots' own documentation rather
than against each other; endpoint forms; the fence value type; the registry entry."""
import struct

import pytest

from cityseeker_ros.core.vehicles.link import LINKS, Fence, LinkError
from cityseeker_ros.core.vehicles.mavlink.flavours import ARDUPILOT, PX4, flavour_named
from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink
from cityseeker_ros.core.vehicles.mavlink.transport import Endpoint, parse_endpoint


def test_px4_custom_mode_is_main_mode_in_bits_16_to_23_and_sub_mode_above():
    # px4_custom_mode.h: OFFBOARD main 6; AUTO main 4 with sub LOITER 3, RTL 5, LAND 6; POSCTL main 3
    assert PX4.custom_mode("OFFBOARD") == 6 << 16 == 393216
    assert PX4.custom_mode("AUTO.LOITER") == 4 << 16 | 3 << 24 == 50593792
    assert PX4.custom_mode("AUTO.RTL") == 4 << 16 | 5 << 24
    assert PX4.custom_mode("AUTO.LAND") == 4 << 16 | 6 << 24
    assert PX4.custom_mode("POSCTL") == 3 << 16
    assert PX4.mode_name(4 << 16 | 3 << 24) == "AUTO.LOITER"
    assert PX4.mode_name(4 << 16 | 7 << 24) == "main 4 sub 7"
    assert PX4.set_mode_params("AUTO.LOITER") == (1.0, 4.0, 3.0)  # MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, main, sub


def test_ardupilot_copter_mode_numbers():
    # ArduCopter mode.h: GUIDED 4, LOITER 5, RTL 6, LAND 9, BRAKE 17
    assert [ARDUPILOT.custom_mode(m) for m in ("GUIDED", "LOITER", "RTL", "LAND", "BRAKE")] == [4, 5, 6, 9, 17]
    assert ARDUPILOT.set_mode_params("GUIDED") == (1.0, 4.0, 0.0)
    assert ARDUPILOT.mode_name(99) == "mode 99"


def test_the_flavours_fly_in_offboard_and_guided_and_hold_with_their_own_modes():
    assert (PX4.control_mode, PX4.hold_mode, PX4.needs_stream) == ("OFFBOARD", "AUTO.LOITER", True)
    assert (ARDUPILOT.control_mode, ARDUPILOT.hold_mode, ARDUPILOT.needs_stream) == ("GUIDED", "BRAKE", False)


def test_parameter_encoding_px4_bytewise_ardupilot_cast():
    wire, kind = PX4.encode_param("GF_ACTION", 3)
    assert struct.pack("<f", wire) == struct.pack("<i", 3) and kind == 6  # MAV_PARAM_TYPE_INT32
    assert PX4.decode_param(wire, kind) == 3.0
    assert PX4.encode_param("GF_MAX_VER_DIST", 120.0) == (120.0, 9)  # REAL32 as is
    assert ARDUPILOT.encode_param("FENCE_ACTION", 4) == (4.0, 2)  # INT8, cast
    assert ARDUPILOT.decode_param(4.0, 2) == 4.0


def test_fence_parameters_per_flavour():
    assert PX4.fence_params(60.0, "rtl") == [("GF_ACTION", 3), ("GF_MAX_VER_DIST", 60.0)]
    assert ARDUPILOT.fence_params(60.0, "hold") == [("FENCE_ACTION", 4), ("FENCE_ALT_MAX", 60.0), ("FENCE_TYPE", 5),
                                                   ("FENCE_ENABLE", 1)]
    with pytest.raises(LinkError, match="GF_ACTION is 4"):
        PX4.fence_action_name(4)  # terminate: nothing the stack sets


@pytest.mark.parametrize("url, endpoint", [
    ("udp://:14540", Endpoint("udpin", "", 14540)),
    ("udp://127.0.0.1:14550", Endpoint("udpin", "127.0.0.1", 14550)),
    ("udpin://0.0.0.0:14550", Endpoint("udpin", "0.0.0.0", 14550)),
    ("udpout://192.168.1.10:14555", Endpoint("udpout", "192.168.1.10", 14555)),
    ("tcp://127.0.0.1:5760", Endpoint("tcp", "127.0.0.1", 5760)),
    ("serial:///dev/ttyUSB0:921600", Endpoint("serial", device="/dev/ttyUSB0", baud=921600)),
    ("serial:///dev/ttyACM0", Endpoint("serial", device="/dev/ttyACM0", baud=57600)),
])
def test_endpoint_forms(url, endpoint):
    assert parse_endpoint(url) == endpoint


@pytest.mark.parametrize("url, words", [("localhost:14540", "no scheme"), ("http://x:1", "unknown scheme"),
                                        ("tcp://:5760", "needs a host"), ("udp://host", "HOST:PORT"),
                                        ("udp://h:99999", "HOST:PORT"), ("serial://", "no serial device")])
def test_bad_endpoints_fail_in_one_line_naming_the_forms(url, words):
    with pytest.raises(LinkError, match=words) as info:
        parse_endpoint(url)
    assert "\n" not in str(info.value)


def test_describe_says_which_side_listens():
    assert parse_endpoint("udp://:14540").describe() == "udp://0.0.0.0:14540 (listening)"
    assert parse_endpoint("udpout://10.0.0.2:14550").describe() == "udpout://10.0.0.2:14550 (sending first)"


def test_fence_is_checked_when_made():
    square = ((0.0, 0.0), (0.0, 0.001), (0.001, 0.001))
    assert Fence(square, 50.0, "rtl").breach_action == "rtl"
    for bad, words in [(((0.0, 0.0), (1.0, 1.0)), "at least 3"), ((*square[:2], (95.0, 0.0)), "latitude"),
                       (square, "ceiling")]:
        with pytest.raises(LinkError, match=words):
            Fence(bad, -1.0 if words == "ceiling" else 50.0)
    with pytest.raises(LinkError, match="breach action must be one of report, hold, rtl, land"):
        Fence(square, 50.0, "explode")


def test_registered_as_mavlink_and_unknown_flavour_fails():
    import cityseeker_ros.core.vehicles.mavlink  # noqa: F401  (registers the link)

    link = LINKS.create("mavlink", endpoint="udp://127.0.0.1:14999")
    assert isinstance(link, MavlinkLink) and link.capabilities.fence and link.capabilities.take_control
    with pytest.raises(LinkError, match="unknown autopilot flavour 'inav'; known: px4, ardupilot"):
        MavlinkLink("udp://:14540", flavour="inav")
    assert flavour_named("px4") is PX4


def test_calls_before_connect_say_so():
    link = MavlinkLink("udp://127.0.0.1:14999")
    for call in (link.state, link.arm, link.hold, link.read_fence):
        with pytest.raises(LinkError, match="not connected"):
            call()
    assert link.link_lost
