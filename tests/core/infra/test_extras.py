"""The extras as the code sees them: their modules, and the one line naming a missing one."""
from __future__ import annotations

import pytest

from cityseeker_ros.core.infra import extras


def test_every_module_the_check_looks_for_is_installed_in_the_test_environment():
    """The test venv has every extra (make test): a module the check cannot find here is misspelt.
    (tests/test_docs.py holds each module to a distribution of its extra in setup.py.)"""
    assert {name: extras.missing_modules(name) for name in extras.EXTRAS} == {name: [] for name in extras.EXTRAS}


def test_a_missing_extra_is_named_with_the_make_target_and_the_pip_line(monkeypatch):
    monkeypatch.setattr(extras, "installed", lambda module: module not in ("pymavlink",))
    extras.require("ros", "`x`")  # installed: nothing said
    with pytest.raises(extras.MissingExtra) as err:
        extras.require("mavlink", "`cityseeker monitor`")
    assert str(err.value) == ("`cityseeker monitor` needs the 'mavlink' extra (the MAVLink link), not installed here "
                              "(no pymavlink): make extra-mavlink (or .venv/bin/pip install -e '.[mavlink]')")


def test_a_module_under_a_missing_package_is_missing_not_an_error():
    assert not extras.installed("no_such_package_here.sub") and extras.installed("json")
