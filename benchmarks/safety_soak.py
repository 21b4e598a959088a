"""Soak the vehicle bridge with randomized stateful scenarios, and check that the oracle finds each
rule broken when its enforcement is switched off.

    .venv/bin/python benchmarks/safety_soak.py --links walker,airsim,px4,ardupilot --scenarios 2000
    .venv/bin/python benchmarks/safety_soak.py --mutations --scenarios 60

The scenarios are the ones the test suite runs in a CI-sized number (tests/core/vehicles/stateful/:
a Hypothesis rule-based state machine driving a real VehicleBridge over each link, the flight-rules
monitor judging what the vehicle saw). Per link it prints the scenarios run, the events per
scenario, how often each dangerous interleaving happened, and the violations (0 is the target).

--mutations switches off one rule's enforcement in the stack at a time (a monkeypatch of the
bridge, its authority machine, gate or envelope, undone afterwards) and runs scenarios until the
monitor reports a violation of that rule, printing how many it took; a rule whose breakage is never
found within --scenarios is reported as NOT FOUND (the oracle or the scenarios miss it).
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402

from cityseeker_ros.core.infra.errors import ConfigError  # noqa: E402

LINKS = ("walker", "airsim", "px4", "ardupilot")
BATCH = 100
# A batch that ends in an error that is no rule violation (a rig call timing out on a loaded machine,
# Hypothesis's replay differing from the run) is reported and the soak goes on, up to this many.
MAX_ERRORS = 3
# The mutation check runs its scenarios as fresh Hypothesis runs of this many: within one run the
# scenarios are largely mutations of each other, and swarm testing switches a random set of rules
# off in each, so one long run can miss a rule for 60 scenarios (on c17132e the fence twice in 11
# runs of 60, the bad frames and stamps once in 6; in batches of 10, 8 runs found them after 4-30).
MUTATION_BATCH = 10


def machine_for(link: str, rig_overrides: dict[str, Any] | None = None) -> type:
    from tests.core.vehicles.stateful.machine import SafetyMachine

    if link == "walker":
        from tests.core.vehicles.stateful.rig_walker import WalkerRig as rig
    elif link == "airsim":
        from tests.core.vehicles.stateful.rig_airsim import AirSimRig as rig
    else:
        from tests.core.vehicles.stateful.rig_mavlink import MavlinkRig

        rig = type(f"{link}Rig", (MavlinkRig,), {"flavour": link})
    if rig_overrides:
        rig = type(f"{rig.__name__}Variant", (rig,), dict(rig_overrides))
    return type(f"{link.capitalize()}Soak", (SafetyMachine,), {"rig_factory": rig, "record": []})


def run(machine: type, scenarios: int, steps: int, stop_on_failure: bool = True) -> tuple[list, Exception | None]:
    """Run `scenarios` scenarios; returns the per-scenario records and the first failure (if any)."""
    failure = None
    try:
        run_state_machine_as_test(machine, settings=settings(
            max_examples=scenarios, stateful_step_count=steps, deadline=None, database=None,
            suppress_health_check=list(HealthCheck), phases=_phases(stop_on_failure)))
    except Exception as exc:  # noqa: BLE001 - a violation (AssertionError) or a broken rig: reported
        failure = exc
    return machine.record, failure


def _phases(shrink: bool):
    from hypothesis import Phase

    return [Phase.generate] if not shrink else [Phase.generate, Phase.shrink]


def _so_far(records: list) -> str:
    """The running totals (a soak stopped early still leaves its figures in the log)."""
    seen: Counter[str] = Counter()
    for _, counts, _ in records:
        seen.update(counts)
    events = sum(len(log) for log, _, _ in records)
    return f"{len(records)} scenarios, {events} events, {sum(len(v) for _, _, v in records)} violation(s)" + \
        "".join(f"; {k}: {n}" for k, n in sorted(seen.items()))


def soak(links: list[str], scenarios: int, steps: int, minutes: float | None = None) -> int:
    """`scenarios` per link, run in batches of at most BATCH (each a fresh Hypothesis run: new random
    draws), stopping early at the first violation, at the MAX_ERRORS-th error that is no violation,
    or once `minutes` per link have passed. Errors count against the exit status like violations."""
    print(f"{'link':<10} {'scenarios':>9} {'events/scenario':>16} {'violations':>10} {'errors':>6} {'s/scenario':>10}  "
          "dangerous interleavings seen")
    bad = 0
    for link in links:
        started = time.monotonic()
        records: list = []
        failure = None
        errors: list[Exception] = []
        while len(records) < scenarios and failure is None and not any(v for _, _, v in records):
            if minutes is not None and time.monotonic() - started > minutes * 60:
                break
            batch, failure = run(machine_for(link), min(BATCH, scenarios - len(records)), steps,
                                 stop_on_failure=False)
            records += batch
            if failure is not None and not any(v for _, _, v in batch):
                errors.append(failure)
                print(f"  {link}: error {len(errors)}, no rule violation: "
                      + " | ".join((str(failure) or type(failure).__name__).splitlines()[:20]), file=sys.stderr)
                failure = failure if len(errors) >= MAX_ERRORS else None
            print(f"  {link}: {_so_far(records)}, {len(errors)} error(s), {time.monotonic() - started:.0f} s",
                  file=sys.stderr, flush=True)
        elapsed = time.monotonic() - started
        seen: Counter[str] = Counter()
        for _, counts, _ in records:
            seen.update(counts)
        events = [len(log) for log, _, _ in records]
        violations = sum(len(v) for _, _, v in records)
        bad += violations + len(errors)
        print(f"{link:<10} {len(records):>9} {statistics.mean(events) if events else 0:>16.1f} {violations:>10} "
              f"{len(errors):>6} {elapsed / max(len(records), 1):>10.2f}  "
              + ", ".join(f"{k}: {n}" for k, n in sorted(seen.items())))
        for log, _, found in records:
            if found:
                print("  violation:\n    " + "\n    ".join([str(v) for v in found] + ["driver:", *log]))
                break
        else:
            if failure is not None:
                print("  failure:\n    " + "\n    ".join((str(failure) or type(failure).__name__).splitlines()[:40]))
    return 1 if bad else 0


# -- mutations: one rule's enforcement off ---------------------------------------------------------

@contextlib.contextmanager
def patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


@contextlib.contextmanager
def events_ignored(*names: str, keep_stop_seq: bool = False) -> Iterator[None]:
    """The authority machine ignores these events (or, with keep_stop_seq, takes them but does not
    count them as stops)."""
    from cityseeker_ros.core.vehicles import authority

    handle = authority.Authority.handle

    def mutated(self, event, seq=None, asked_at=None):
        if event.value in names and not keep_stop_seq:
            return authority.Step(event, self.state, self.state, None)
        before = self.stop_seq
        step = handle(self, event, seq, asked_at)
        if event.value in names:
            self.stop_seq = before
        return step

    with patched(authority.Authority, "handle", mutated):
        yield


@contextlib.contextmanager
def link_events_not_stops() -> Iterator[None]:
    """A link loss and a reconnect are not stops: the authority takes both events without counting
    them, and the reconnect's hold, once it reached the vehicle, does not count either."""
    from cityseeker_ros.core.vehicles import authority

    stopped = authority.Authority.stopped

    def mutated(self):
        if self.history and self.history[-1].event.value in ("link_lost", "connect"):
            return
        stopped(self)

    with events_ignored("link_lost", "connect", keep_stop_seq=True), \
            patched(authority.Authority, "stopped", mutated):
        yield


@contextlib.contextmanager
def fresh_always() -> Iterator[None]:
    from cityseeker_ros.core.vehicles import authority

    with patched(authority.Authority, "is_fresh", lambda self, seq: True):
        yield


@contextlib.contextmanager
def pilot_ignored() -> Iterator[None]:
    """The bridge never sees a foreign mode, and the MAVLink link never notices one: it judges no
    heartbeat's mode (so it neither refuses motion nor reports the mode) and takes control back."""
    from cityseeker_ros.core.vehicles import bridge
    from cityseeker_ros.core.vehicles.mavlink import link

    def blind(self, msg):  # only the control mode's own heartbeat is noted (take_control waits for it)
        if msg.get_type() == "HEARTBEAT" and self._flavour is not None \
                and self._flavour.mode_name(msg.custom_mode) == self._flavour.control_mode:
            with self._motion_lock:
                self._confirmed = True

    with patched(bridge.VehicleBridge, "_foreign", lambda self, snap: None), \
            patched(link.MavlinkLink, "_on_message", blind), \
            patched(link.MavlinkLink, "_judge_mode", lambda self, mode, armed, now: False):
        yield


@contextlib.contextmanager
def fence_off() -> Iterator[None]:
    from cityseeker_ros.core.vehicles.safety import geofence
    from cityseeker_ros.core.vehicles.safety.codes import OK

    with patched(geofence.CircleFence, "check_goal", lambda self, lat, lon, alt: OK), \
            patched(geofence.CircleFence, "check_path", lambda self, a, b: OK):
        yield


@contextlib.contextmanager
def speed_unclamped() -> Iterator[None]:
    from cityseeker_ros.core.vehicles.safety import limits

    with patched(limits.Limits, "clamp_goal", lambda self, goal, start=None, horizontal=None: (goal, None)):
        yield


@contextlib.contextmanager
def envelope_off() -> Iterator[None]:
    from cityseeker_ros.core.vehicles.safety.codes import OK
    from tests.core.vehicles.stateful import machine

    with patched(machine, "check_envelope", lambda *args: OK):
        yield


# rule -> (the link it is exercised on, rig overrides, the mutation)
MUTATIONS: dict[str, tuple[str, dict[str, Any], Callable[[], Any]]] = {
    "no_motion_after_hold": ("walker", {}, fresh_always),
    "pilot_wins": ("px4", {}, pilot_ignored),
    "inside_fence": ("walker", {}, fence_off),
    # a vehicle that flies as fast as told: the stack's clamp is all that keeps the limit
    "speed_limits": ("px4", {"vehicle": {"max_climb_m_s": 1.0, "max_descent_m_s": 1.0, "cruise_m_s": 12.0,
                                         "max_speed_m_s": 12.0}, "rtl": False, "battery": False}, speed_unclamped),
    "no_motion_after_link_return": ("walker", {}, link_events_not_stops),
    "ends_in_hold": ("walker", {}, lambda: events_ignored("seek_end", "shutdown")),
    "refuses_bad_frames_and_stale_stamps": ("walker", {}, envelope_off),
}


def mutations(scenarios: int, steps: int, only: list[str]) -> int:
    """Per rule: scenarios until its violation, at most `scenarios`. A run that stops on another
    rule's violation (a mutation may break more than its own rule) goes on with fresh draws; one that
    stops on an error (a broken rig) is reported under the table."""
    print(f"{'rule (its enforcement off)':<40} {'link':<8} {'found after':>12}  violation")
    missed, errors = 0, []
    for rule, (link, overrides, mutation) in MUTATIONS.items():
        if only and rule not in only:
            continue
        records: list = []
        with mutation():
            while len(records) < scenarios and not _found(records, rule):
                batch, failure = run(machine_for(link, overrides), min(MUTATION_BATCH, scenarios - len(records)),
                                     steps, stop_on_failure=False)
                records += batch
                if failure is not None and not any(v for _, _, v in batch):  # not a violation: an error
                    errors.append(f"{rule}: {(str(failure) or type(failure).__name__).splitlines()[0][:200]}")
                    break
        found = _found(records, rule)
        first = next((x for _, _, v in records for x in v if x.rule == rule), None)
        missed += found is None
        print(f"{rule:<40} {link:<8} {('NOT FOUND' if found is None else f'{found} scenarios'):>12}  "
              f"{first.detail[:90] if first else ''}", flush=True)
    for line in errors:
        print(f"  error: {line}")
    return 1 if missed or errors else 0


def _found(records: list, rule: str) -> int | None:
    """How many scenarios it took to find a violation of `rule` (None: not yet)."""
    return next((i + 1 for i, (_, _, v) in enumerate(records) if any(x.rule == rule for x in v)), None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", default=",".join(LINKS), help=f"comma-separated, of {', '.join(LINKS)}")
    parser.add_argument("--scenarios", type=int, default=200, help="per link (per rule with --mutations)")
    parser.add_argument("--steps", type=int, default=10, help="events per scenario at most")
    parser.add_argument("--mutations", action="store_true", help="the mutation check instead of the soak")
    parser.add_argument("--rules", default="", help="with --mutations: only these rules (comma-separated)")
    parser.add_argument("--minutes", type=float, default=None, help="soak: stop each link after this long")
    args = parser.parse_args(argv)
    links = [name.strip() for name in args.links.split(",") if name.strip()]
    unknown = sorted(set(links) - set(LINKS))
    if unknown:
        raise ConfigError(f"--links: unknown link(s) {', '.join(unknown)}; known: {', '.join(LINKS)}")
    rules = [r for r in args.rules.split(",") if r]
    unknown = sorted(set(rules) - set(MUTATIONS))
    if unknown:
        raise ConfigError(f"--rules: unknown rule(s) {', '.join(unknown)}; known: {', '.join(MUTATIONS)}")
    if args.scenarios < 1 or args.steps < 1:
        raise ConfigError("--scenarios and --steps must be at least 1")
    logging.basicConfig(level=logging.ERROR)  # the bridge's per-connect notes would drown the table
    started = time.monotonic()
    if args.mutations:
        code = mutations(args.scenarios, args.steps, rules)
    else:
        code = soak(links, args.scenarios, args.steps, args.minutes)
    print(f"wall {time.monotonic() - started:.0f} s")
    return code


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ConfigError as exc:
        print(f"safety_soak: {exc}", file=sys.stderr)
        sys.exit(2)
