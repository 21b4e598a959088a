"""benchmarks/safety_soak.py's bookkeeping: an error that is no rule violation (a rig call timing
out under load, Hypothesis's replay differing from its run) stopped a whole link's soak after 17
scenarios; it is now reported and the soak goes on, up to MAX_ERRORS, and a violation still stops
it. The batches are canned here; the scenarios themselves run in tests/core/vehicles/stateful/."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "safety_soak.py"


@pytest.fixture
def soak_module():
    spec = importlib.util.spec_from_file_location("safety_soak", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scenario(violations=()):
    return (["goal inside 0 deg 10 m alt 5 [holding]"], {"pilot switch during a hold": 1}, list(violations))


def canned(module, monkeypatch, batches):
    """`run` returns each of `batches` in turn: (records, failure)."""
    calls = []

    def run(machine, scenarios, steps, stop_on_failure=True):
        calls.append(scenarios)
        return batches[len(calls) - 1]

    monkeypatch.setattr(module, "run", run)
    monkeypatch.setattr(module, "machine_for", lambda link: object)
    monkeypatch.setattr(module, "BATCH", 2)
    return calls


def test_an_error_that_is_no_violation_is_reported_and_the_soak_goes_on(soak_module, monkeypatch, capsys):
    calls = canned(soak_module, monkeypatch, [([scenario()], TimeoutError("rig: no fix within 5 s")),
                                              ([scenario(), scenario()], None), ([scenario()], None)])
    assert soak_module.soak(["walker"], scenarios=4, steps=3) == 1  # an error still fails the soak
    out, err = capsys.readouterr()
    assert calls == [2, 2, 1] and "error 1, no rule violation: rig: no fix within 5 s" in err
    row = next(line for line in out.splitlines() if line.startswith("walker"))
    assert row.split()[1:5] == ["4", "1.0", "0", "1"]  # scenarios, events each, violations, errors


def test_a_violation_stops_the_soak_and_errors_stop_it_at_the_limit(soak_module, monkeypatch, capsys):
    calls = canned(soak_module, monkeypatch, [([scenario(), scenario(["ends_in_hold: no hold"])],
                                               AssertionError("ends_in_hold"))] + [([scenario()], None)] * 3)
    assert soak_module.soak(["px4"], scenarios=10, steps=3) == 1
    assert calls == [2] and "violation:" in capsys.readouterr().out
    calls = canned(soak_module, monkeypatch, [([scenario()], RuntimeError(f"flaky {i}")) for i in range(5)])
    assert soak_module.soak(["px4"], scenarios=10, steps=3) == 1
    assert len(calls) == soak_module.MAX_ERRORS


def test_the_mutation_check_draws_its_scenarios_in_fresh_runs_of_a_batch(soak_module, monkeypatch, capsys):
    """One long Hypothesis run can miss a rule for 60 scenarios (its scenarios are mutations of each
    other); the check asks for at most MUTATION_BATCH per run, until the rule is found or the
    scenarios are spent."""
    calls = canned(soak_module, monkeypatch, [([scenario()] * 10, None)] * 6)
    monkeypatch.setattr(soak_module, "machine_for", lambda link, overrides=None: object)
    assert soak_module.mutations(60, 3, ["ends_in_hold"]) == 1  # never found: the check fails
    assert calls == [10] * 6 and "NOT FOUND" in capsys.readouterr().out
    found = ([scenario()] * 3 + [scenario([type("V", (), {"rule": "ends_in_hold", "detail": "no hold"})()])],
             AssertionError("ends_in_hold"))
    calls = canned(soak_module, monkeypatch, [([scenario()] * 10, None), found])
    monkeypatch.setattr(soak_module, "machine_for", lambda link, overrides=None: object)
    assert soak_module.mutations(60, 3, ["ends_in_hold"]) == 0
    assert calls == [10, 10] and "14 scenarios" in capsys.readouterr().out
