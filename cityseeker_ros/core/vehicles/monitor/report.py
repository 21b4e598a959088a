"""The monitor's verdict as a JSON-ready record and as the lines a person reads at the end of a run."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from cityseeker_ros.core.vehicles.monitor.monitor import FlightMonitor


def monitor_report(monitor: FlightMonitor, messages: Mapping[str, int], **context: Any) -> dict[str, Any]:
    """context: what the run was (connection, safety file, duration); kept as given."""
    rules = [s.to_dict() for s in monitor.status()]
    return {
        **context,
        "passive": monitor.passive,
        "messages": dict(sorted(messages.items())),
        "rules": rules,
        "violations": [v.to_dict() for v in monitor.violations],
        "events": [{"t": round(t, 3), "what": what} for t, what in monitor.events],
        "verdict": verdict(monitor, messages),
    }


def verdict(monitor: FlightMonitor, messages: Mapping[str, int]) -> str:
    """"violations", "clean", or "nothing_heard": no vehicle was heard, so a clean run would mean nothing."""
    if monitor.violations:
        return "violations"
    return "clean" if any(k.startswith("vehicle ") and n for k, n in messages.items()) else "nothing_heard"


def summary_lines(report: Mapping[str, Any]) -> list[str]:
    messages = Counter(report["messages"])
    sides = Counter()
    for key, n in messages.items():
        sides[key.split(" ", 1)[0]] += n
    lines = [f"messages: {sum(messages.values())} ({sides['stack']} from the stack, {sides['vehicle']} from the "
             f"vehicle, {sides['other']} from others)"]
    if not sides["stack"]:
        lines.append("note: nothing from the stack's system was seen; rules on what it sent judged nothing "
                     "(does this output carry both directions?)")
    for rule in report["rules"]:
        state = "checked" if rule["checked"] else "not checked"
        why = f" ({rule['why']})" if rule["why"] else ""
        lines.append(f"  {rule['name']}: {state}, {rule['judged']} judged, {rule['violations']} violation(s){why}")
    n = len(report["violations"])
    lines.append({"violations": f"verdict: {n} violation(s)", "clean": "verdict: no violation",
                  "nothing_heard": "verdict: nothing heard from a vehicle, nothing judged"}[report["verdict"]])
    return lines
