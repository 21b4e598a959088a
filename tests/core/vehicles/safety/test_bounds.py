"""Bounds on the vehicle links' settings (link_params) and the take-off height against the safety
file: every number has a range in one table (core/vehicles/safety/bounds.py), a value outside is
refused before anything connects, with one line naming the key, the value and the range; the
shipped defaults and examples lie inside."""
from __future__ import annotations

import inspect
import json
import re
from dataclasses import fields
from pathlib import Path

import pytest

from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.vehicles.airsim.motion import FlyMotion
from cityseeker_ros.core.vehicles.safety import Limits, SafetyConfig
from cityseeker_ros.core.vehicles.safety.bounds import (
    AIRSIM_MOTION_BOUNDS,
    MAVLINK_BOUNDS,
    SAFETY_BOUNDS,
    check_takeoff_height,
    takeoff_height_problem,
)
from cityseeker_ros.core.vehicles.safety.config import load_safety_config
from cityseeker_ros.ros import vehicle_link

REPO = Path(__file__).resolve().parents[4]
MAVLINK = {"connection": "udp://127.0.0.1:14540"}
ANCHOR = {"lat": 43.7384, "lon": 7.4246}
CEILING_30 = SafetyConfig.from_dict({"geofence": {"circle": {"center": [0, 0], "radius_m": 100}},
                                     "max_altitude_m": 30})


@pytest.mark.parametrize("key, value, allowed", [
    ("link_loss_s", 1e6, "a positive number from 0.3 to 5 s"),
    ("link_loss_s", -1, "a positive number from 0.3 to 5 s"),
    ("takeoff_alt_m", 1e4, "a positive number from 1 to 120 m above home"),
    ("takeoff_alt_m", -2, "from 1 to 120 m above home"),
    ("setpoint_hz", 0, "a positive number from 2 to 50 Hz"),
    ("keepalive_s", 3600, "from 0.2 to 2 s"),
    ("prestream_s", 0, "from 0.2 to 5 s"),
    ("command_timeout_s", 0, "from 0.1 to 3 s"),
    ("command_retries", 1000, "an integer from 0 to 20"),
    ("command_retries", 2.5, "an integer from 0 to 20"),
    ("system_id", 0, "an integer from 1 to 255"),
    ("source_component", 300, "an integer from 1 to 255"),
    ("takeoff_alt_m", "10", "from 1 to 120 m above home"),
    ("link_loss_s", True, "from 0.3 to 5 s"),
])
def test_a_mavlink_setting_out_of_range_is_refused_naming_key_value_and_range(key, value, allowed):
    line = f"^link_params {key} must be (.*)?{allowed} \\(.+\\), got {re.escape(repr(value))}$"
    with pytest.raises(ConfigError, match=line):
        vehicle_link.check("mavlink", {**MAVLINK, key: value})


def test_the_command_retries_fit_a_budget():
    vehicle_link.check("mavlink", {**MAVLINK, "command_timeout_s": 0.2, "command_retries": 20})  # the lossy tests'
    with pytest.raises(ConfigError, match=r"^link_params command_timeout_s x \(command_retries \+ 1\) = 3 x 11 = 33 s "
                                          "must be at most 10 s"):
        vehicle_link.check("mavlink", {**MAVLINK, "command_timeout_s": 3, "command_retries": 10})


@pytest.mark.parametrize("home, what", [
    ([43.7, 7.4], "home must be \\[lat, lon, alt\\]"),
    ("here", "home must be \\[lat, lon, alt\\]"),
    ([95, 7.4, 0], "home must be \\[lat, lon, alt\\]"),
    ([43.7, 7.4, 1e6], "home\\[2\\] must be a number from -500 to 9000 m above sea level"),
])
def test_a_bad_mavlink_home_is_refused(home, what):
    with pytest.raises(ConfigError, match=f"^link_params {what}"):
        vehicle_link.check("mavlink", {**MAVLINK, "home": home})


@pytest.mark.parametrize("params, what", [
    ({"port": 0}, "link_params port must be an integer from 1 to 65535"),
    ({"rpc_timeout_s": 0}, "link_params rpc_timeout_s must be a positive number from 0.1 to 30 s"),
    ({"motion_timeout_s": 1e9}, "link_params motion_timeout_s must be a positive number from 1 to 3600 s"),
    ({"probe_timeout_s": -1}, "link_params probe_timeout_s must be"),
    ({"anchor": {**ANCHOR, "yaw_offset_deg": 1000}}, "link_params anchor.yaw_offset_deg must be a number from -360"),
    ({"motion": "fly", "motion_params": {"max_speed_mps": 100}},
     "link_params motion_params.max_speed_mps must be a positive number from 0.1 to 20 m/s"),
    ({"motion": "fly", "motion_params": {"max_yaw_rate_dps": 0}}, "link_params motion_params.max_yaw_rate_dps"),
    ({"motion": "fly", "motion_params": {"altitude_m": 500}}, "link_params motion_params.altitude_m must be"),
    ({"motion": "fly", "motion_params": {"max_sped_mps": 2}},
     "link_params motion_params: unknown key\\(s\\) max_sped_mps for motion fly; known: altitude_m, max_speed_mps"),
    ({"motion": "teleport", "motion_params": {"max_speed_mps": 2}},
     "link_params motion_params: unknown key\\(s\\) max_speed_mps for motion teleport; known: altitude_m$"),
    ({"motion_params": [1, 2]}, "link_params motion_params must be a mapping"),
])
def test_an_airsim_setting_out_of_range_is_refused(params, what):
    with pytest.raises(ConfigError, match=f"^{what}"):
        vehicle_link.check("airsim", {"anchor": ANCHOR, **params})


@pytest.mark.parametrize("params, what", [
    ({"speed_m_s": -1}, "link_params speed_m_s must be a number from 0 to 20 m/s"),
    ({"speed_m_s": 1e6}, "link_params speed_m_s must be a number from 0 to 20 m/s"),
    ({"noise_m": 1e4}, "link_params noise_m must be a number from 0 to 50 m"),
    ({"seed": -1}, "link_params seed must be an integer from 0"),
    ({"follow_goals": 1.5}, "link_params follow_goals must be an integer"),
])
def test_a_walker_setting_out_of_range_is_refused(params, what):
    with pytest.raises(ConfigError, match=f"^{what}"):
        vehicle_link.check("walker", {"start": "43.7384,7.4246", **params})


def test_a_takeoff_above_the_ceiling_is_refused():
    """The fault: a take-off with takeoff_alt_m 45 climbed to 45 m under a 30 m ceiling."""
    with pytest.raises(ConfigError, match="^takeoff_alt_m 45 m is above the safety file's ceiling max_altitude_m 30 m"):
        check_takeoff_height(45.0, CEILING_30)
    with pytest.raises(ConfigError, match="^takeoff_alt_m 3 m is below the safety file's floor min_altitude_m 5 m"):
        check_takeoff_height(3.0, Limits(3.0, 1.0, 30.0, min_altitude_m=5.0))
    check_takeoff_height(30.0, CEILING_30)  # the ceiling itself is inside
    check_takeoff_height(None, CEILING_30)  # a link without a take-off height
    assert takeoff_height_problem(10.0, SafetyConfig.estop_only()) is None  # no safety file: no ceiling


def test_the_link_params_are_checked_against_the_safety_file():
    with pytest.raises(ConfigError, match="^link_params takeoff_alt_m 45 m is above the safety file's ceiling"):
        vehicle_link.check("mavlink", {**MAVLINK, "takeoff_alt_m": 45}, safety=CEILING_30)
    vehicle_link.check("mavlink", {**MAVLINK, "takeoff_alt_m": 45})  # no safety file known here: in range
    with pytest.raises(ConfigError, match="^link_params motion_params.altitude_m 40 m lies outside the safety file's "
                                          "floor and ceiling \\(-5 to 30 m\\)"):
        vehicle_link.check("airsim", {"anchor": ANCHOR, "motion": "fly", "motion_params": {"altitude_m": 40}},
                           safety=CEILING_30)


def test_make_vehicle_checks_the_default_takeoff_height_too():
    pytest.importorskip("pymavlink")
    low = SafetyConfig.from_dict({"geofence": {"circle": {"center": [0, 0], "radius_m": 100}}, "max_altitude_m": 8})
    with pytest.raises(ConfigError, match="^link_params takeoff_alt_m 10 m is above the safety file's ceiling "
                                          "max_altitude_m 8 m"):
        vehicle_link.make_vehicle("mavlink", MAVLINK, safety=low)
    setup = vehicle_link.make_vehicle("mavlink", {**MAVLINK, "takeoff_alt_m": 5}, safety=low)
    assert setup.link.takeoff_alt_m == 5.0


def test_unknown_mavlink_keys_are_one_line():
    pytest.importorskip("pymavlink")
    with pytest.raises(ConfigError, match="^link_params for the mavlink link: unknown key.s. takeof_alt_m; known: "):
        vehicle_link.check("mavlink", {**MAVLINK, "takeof_alt_m": 5})


# -- the tables and the code agree: every default lies inside its range ------------------------------

def test_the_safety_defaults_lie_inside_their_ranges():
    for f in fields(SafetyConfig):
        if f.name in SAFETY_BOUNDS and f.default is not None:
            bound = SAFETY_BOUNDS[f.name]
            assert bound.low <= f.default <= bound.high, f.name


def test_the_mavlink_defaults_lie_inside_their_ranges():
    pytest.importorskip("pymavlink")
    from cityseeker_ros.core.vehicles.mavlink.link import MavlinkLink

    defaults = {p.name: p.default for p in inspect.signature(MavlinkLink).parameters.values()}
    assert set(MAVLINK_BOUNDS) <= set(defaults), set(MAVLINK_BOUNDS) - set(defaults)
    assert (defaults["command_timeout_s"], defaults["command_retries"]) == (0.5, 5)  # the budget's defaults
    numeric = {k for k, v in defaults.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert numeric <= set(MAVLINK_BOUNDS), f"a new number without a range: {numeric - set(MAVLINK_BOUNDS)}"
    vehicle_link.check("mavlink", {**MAVLINK, **{k: defaults[k] for k in MAVLINK_BOUNDS}},
                       safety=load_safety_config(str(REPO / "config" / "safety.yaml")))


def test_the_fly_motion_defaults_lie_inside_their_ranges():
    parameters = list(inspect.signature(FlyMotion).parameters)[2:]  # after (link, anchor)
    assert set(parameters) == set(AIRSIM_MOTION_BOUNDS), "every fly setting has a range"
    defaults = {p.name: p.default for p in inspect.signature(FlyMotion).parameters.values()
                if p.name in AIRSIM_MOTION_BOUNDS and p.default is not None}
    vehicle_link.check("airsim", {"anchor": ANCHOR, "motion": "fly", "motion_params": defaults})


def test_the_shipped_examples_pass():
    safety = load_safety_config(str(REPO / "config" / "safety.yaml"))
    launch = (REPO / "launch" / "vehicle.launch.py").read_text()
    example = json.loads(re.search(r"link_params:='(\{.*?\})'", launch).group(1))
    vehicle_link.check("airsim", example, safety=safety)
