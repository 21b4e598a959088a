"""The simulated walker read and commanded from several threads at once, as a WalkerLink behind the
bridge does (telemetry reads fixes while the bridge sends goals and holds): a fix read while a
hold cleared the goal once raised TypeError on the soak's telemetry thread."""
from __future__ import annotations

import threading

from cityseeker_ros.core.vehicles.sim.walker import SimulatedWalker


def test_fixes_goals_and_holds_from_three_threads_never_fail():
    walker = SimulatedWalker(43.7384, 7.4246, speed_m_s=1000.0)
    errors: list[BaseException] = []
    stop = threading.Event()

    def run(step) -> None:
        try:
            while not stop.is_set():
                step()
        except BaseException as exc:  # noqa: BLE001 - counted below
            errors.append(exc)

    steps = [walker.fix, lambda: walker._walk_to(43.7390, 7.4250), walker._stand]
    threads = [threading.Thread(target=run, args=(step,)) for step in steps]
    for t in threads:
        t.start()
    stop.wait(2.0)
    stop.set()
    for t in threads:
        t.join()
    assert errors == [] and walker.holds > 100 and walker.moves > 100
