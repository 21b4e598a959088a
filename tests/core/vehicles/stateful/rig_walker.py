"""The walker behind the bridge, tapped at the walker: every call that reached it (the vehicle's
view) and its position at 20 Hz. A link drop makes the walker unreachable (its calls and its state
fail, as a dropped radio would), which the bridge must notice by itself."""
from __future__ import annotations

import threading
import time
from typing import Optional

from cityseeker_ros.core.vehicles.bridge import VehicleBridge
from cityseeker_ros.core.vehicles.link import LinkError, VehicleState
from cityseeker_ros.core.vehicles.monitor import Reported, Sent
from cityseeker_ros.core.vehicles.safety import SafetyConfig, SafetyGate
from cityseeker_ros.core.vehicles.sim import SimulatedWalker, WalkerLink
from tests.core.vehicles.stateful.harness import HOME, SAFETY, Tap, latched_estop, wait_for


class TappedWalkerLink(WalkerLink):
    def __init__(self, walker: SimulatedWalker, tap: Tap) -> None:
        super().__init__(walker)
        self.tap, self.dropped = tap, False

    def _reach(self, what: str) -> None:
        if self.dropped:
            raise LinkError(f"{what}: the walker is unreachable (link dropped)")

    def state(self) -> VehicleState:
        self._reach("state")
        return super().state()

    def go_to(self, lat, lon, alt_m, heading_deg=None, speed_m_s=None) -> None:
        self._reach("go_to")
        self.tap.add(Sent(time.monotonic(), "position", lat=lat, lon=lon, alt_m=0.0))
        super().go_to(lat, lon, alt_m, heading_deg, speed_m_s)

    def hold(self) -> None:
        self._reach("hold")
        self.tap.add(Sent(time.monotonic(), "hold"))
        super().hold()


class WalkerRig:
    pilot = battery = velocity = False  # a walker has no modes, no battery and takes no velocities
    link_drop = True

    def __init__(self, tap: Tap, safety: Optional[dict] = None) -> None:
        self.tap, self.safety, self.home = tap, dict(safety or SAFETY), HOME
        self.walker = SimulatedWalker(*HOME, speed_m_s=1.5)
        self.link = TappedWalkerLink(self.walker, tap)
        self._stop = threading.Event()
        self._poller = threading.Thread(target=self._poll, daemon=True)
        self._poller.start()
        self.bridge = self._bridge()

    def _bridge(self) -> VehicleBridge:
        gate = SafetyGate.from_config(SafetyConfig.from_dict(self.safety), estop=latched_estop(self.tap))
        bridge = VehicleBridge(self.link, gate, safety_period_s=0.02, state_period_s=0.05, link_timeout_s=0.3,
                               reconnect_period_s=0.2)
        if not self.link.dropped:  # a bridge restarted while the radio is down connects once it is back
            assert wait_for(lambda: bridge.holds >= 1, 5.0), "the walker did not connect"
        return bridge

    def _poll(self) -> None:
        while not self._stop.wait(0.05):
            lat, lon = self.walker.fix()
            self.tap.add(Reported(time.monotonic(), lat=lat, lon=lon, alt_m=0.0, armed=True))

    def altitude(self, alt_m: float) -> float:
        return 0.0 if -10.0 < alt_m < 25.0 else alt_m  # a walker walks on the ground

    def drop_link(self) -> None:
        self.link.dropped = True

    def restore_link(self) -> None:
        self.link.dropped = False

    def stall(self, seconds: float) -> None:
        stall(self.bridge, seconds)

    def restart(self) -> None:
        self.bridge.close()
        self.link.connected = False
        self.bridge = self._bridge()

    def close(self) -> None:
        self.bridge.close()

    def shutdown(self) -> None:
        self._stop.set()
        self._poller.join(1.0)


def stall(bridge: VehicleBridge, seconds: float) -> None:
    """The bridge's safety thread blocks inside its next tick for `seconds` (the test goes on)."""
    tick = bridge.tick

    def stuck(now: Optional[float] = None):
        bridge.tick = tick
        time.sleep(seconds)
        return tick(now)

    bridge.tick = stuck
