"""Link loss shows within about a second of the vehicle going quiet, and clears when it talks again;
and a link that loses 30% of its datagrams each way still connects, flies and uploads a fence."""
import time

import pytest

from cityseeker_ros.core.streets.geodesy import geodesic_m
from tests.core.vehicles.mavlink.conftest import HOME, airborne, north_of, wait_until


def test_link_loss_is_reported_within_a_second_of_silence(vehicle):
    sim, link = vehicle("px4")
    wait_until(lambda: link.state().battery_fraction is not None, 2.0)
    assert not link.link_lost and link.state().heartbeat_age_s < 1.1
    silenced = time.monotonic()
    sim.stop_answering()
    lost_after = wait_until(lambda: link.link_lost, 3.0, what="link loss")
    # the limit is link_loss_s since the last datagram; the last one left at most one 10 Hz period
    # before silence: reported within a second, and never before the limit
    assert link.link_loss_s - 0.15 <= lost_after <= link.link_loss_s + 0.1 + 0.1 < 1.0
    state = link.state()
    assert state.link_lost and state.heartbeat_age_s >= time.monotonic() - silenced - 1.1
    sim.resume_answering()
    wait_until(lambda: not link.link_lost, 2.0, what="link back")


LOSSY = {"sim": {"drop": 0.3, "seed": 7}, "link": {"command_timeout_s": 0.2, "command_retries": 20}}


def assert_about_thirty_percent_lost(sim) -> None:
    """Both ways lost some; all in all about 30% (a hundred-odd datagrams: binomial noise is ~5%)."""
    lost = sim.dropped["in"] + sim.dropped["out"]
    total = lost + sum(sim.counts.values()) + sim.sent
    assert sim.dropped["in"] > 0 and sim.dropped["out"] > 0 and 0.15 < lost / total < 0.45, (sim.dropped, total)


def test_thirty_percent_packet_loss_still_connects_and_flies(vehicle):
    sim, link = vehicle("px4", **LOSSY)
    assert link.report is not None and link.report.autopilot == "px4"
    airborne(link, 3.0)
    goal = (north_of(HOME[0], 12.0), HOME[1])
    link.go_to(goal[0], goal[1], 3.0)
    wait_until(lambda: geodesic_m(link.state().lat, link.state().lon, *goal) < 0.3, 8.0, link, "the goal")
    lat, lon, alt = sim.position
    assert geodesic_m(lat, lon, *goal) < 0.5 and abs(alt - 3.0) < 0.3
    assert_about_thirty_percent_lost(sim)
    assert not link.link_lost


@pytest.mark.parametrize("flavour", ["px4", "ardupilot"])
def test_thirty_percent_packet_loss_fence_round_trip(vehicle, flavour):
    sim, link = vehicle(flavour, **LOSSY)
    square = [(HOME[0] - 0.001, HOME[1] - 0.001), (HOME[0] - 0.001, HOME[1] + 0.001),
              (HOME[0] + 0.001, HOME[1] + 0.001), (HOME[0] + 0.001, HOME[1] - 0.001)]
    sent = link.upload_fence(square, 40.0, "land")
    assert link.read_fence() == sent and len(sim.fence) == 4
    assert_about_thirty_percent_lost(sim)
