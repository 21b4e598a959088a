"""What a link without a wire the monitor can read (AirSim, the walker) sent and reported, taken at the
link's door: `MonitoredLink` wraps the link the bridge drives, records each motion and stop call that
returned as a `Sent` and each `state()` as a `Reported`, and passes everything through unchanged, so
the bridge behaves the same with it and without it.

It is duck-typed on purpose: the monitor imports nothing of the link contract (test_independence.py).
A call that raised is not recorded (nothing can be said of what left); a call is stamped when it was
made, so a stop and a motion call that overlap keep the order in which the bridge made them.
"""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any, Optional

from cityseeker_ros.core.vehicles.monitor.observations import (
    ARM,
    HOLD,
    LAND,
    MODE,
    POSITION,
    RTL,
    TAKEOFF,
    TERMINATE,
    VELOCITY,
    Observation,
    Reported,
    Sent,
)

Clock = Callable[[], float]
_OWN = frozenset({"inner", "_feed", "_clock", "counts"})


class MonitoredLink:
    """`MonitoredLink(link, feed)`: `link` as the bridge sees it; `feed(observation)` takes what it did
    (a LiveMonitor's feed). Attributes it does not define are the wrapped link's, read and written."""

    def __init__(self, inner: Any, feed: Callable[[Observation], None], clock: Clock = time.monotonic) -> None:
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "_feed", feed)
        object.__setattr__(self, "_clock", clock)
        object.__setattr__(self, "counts", Counter())  # "stack CALL", "vehicle state": for the monitor's report

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)

    def __repr__(self) -> str:
        return f"MonitoredLink({self.inner!r})"

    def __enter__(self) -> MonitoredLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, name: str, call: Callable[[], Any], sent: Optional[Callable[[float], Sent]]) -> Any:
        t = self._clock()
        result = call()
        if sent is not None:
            self.counts[f"stack {name}"] += 1
            self._feed(sent(t))
        return result

    # -- the vehicle's side ----------------------------------------------------------------------------
    def state(self) -> Any:
        t = self._clock()
        s = self.inner.state()
        self.counts["vehicle state"] += 1
        self._feed(Reported(t, lat=s.lat, lon=s.lon, alt_m=s.alt_m, velocity_enu=tuple(s.velocity_enu),
                            mode=s.mode, armed=s.armed))
        return s

    # -- what the stack sends --------------------------------------------------------------------------
    def go_to(self, lat: float, lon: float, alt_m: float, heading_deg: Optional[float] = None,
              speed_m_s: Optional[float] = None) -> None:
        flown = self.inner.flown_altitude_m(alt_m)
        return self._call("go_to", lambda: self.inner.go_to(lat, lon, alt_m, heading_deg, speed_m_s),
                          lambda t: Sent(t, POSITION, lat=lat, lon=lon, alt_m=flown, frame="global_relative_alt"))

    def velocity(self, east_m_s: float, north_m_s: float, up_m_s: float = 0.0, yaw_rate_deg_s: float = 0.0) -> None:
        return self._call("velocity", lambda: self.inner.velocity(east_m_s, north_m_s, up_m_s, yaw_rate_deg_s),
                          lambda t: Sent(t, VELOCITY, velocity_enu=(east_m_s, north_m_s, up_m_s), frame="enu"))

    def hold(self) -> None:
        return self._call("hold", self.inner.hold, lambda t: Sent(t, HOLD))

    def land(self) -> None:
        return self._call("land", self.inner.land, lambda t: Sent(t, LAND))

    def return_to_launch(self) -> None:
        return self._call("return_to_launch", self.inner.return_to_launch, lambda t: Sent(t, RTL))

    def terminate(self) -> None:
        return self._call("terminate", self.inner.terminate, lambda t: Sent(t, TERMINATE))

    def arm(self) -> None:
        return self._call("arm", self.inner.arm, lambda t: Sent(t, ARM))

    def takeoff(self, alt_m: Optional[float] = None, timeout_s: float = 30.0) -> None:
        height = alt_m if alt_m is not None else getattr(self.inner, "takeoff_alt_m", None)
        return self._call("takeoff", lambda: self.inner.takeoff(alt_m, timeout_s),
                          lambda t: Sent(t, TAKEOFF, alt_m=height))

    def take_control(self) -> None:
        """A mode change into the control mode, on a link that has one (elsewhere nothing leaves)."""
        moves = bool(self.inner.capabilities.take_control)
        return self._call("take_control", self.inner.take_control,
                          (lambda t: Sent(t, MODE, control_mode=True)) if moves else None)
