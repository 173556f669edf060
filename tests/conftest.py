"""The suite's two tiers. ``python -m pytest`` (the README's test command) runs every test but those
marked ``slow``: end-to-end tests that drive the CLI through subprocesses, signals and sweeps, install
wheels, or search on long simulated clocks (about seven minutes together). They run in their own step
of ``.ci/run`` (``python -m pytest -m slow``), so CI runs everything; a test run selecting them by a
``-m`` expression that names ``slow`` runs them too.

A suite started where SIGINT is ignored (a background job of a non-interactive shell: ``cmd &`` in a
script, ``nohup``) would pass that on to every process the tests start, and the tests that send Ctrl-C to
a run, a sweep or a process group would see it ignored (seen: five slow tests, exit 0 instead of 130).
The tests establish their precondition: SIGINT is Python's default in this process, so its children
start with the default too."""

from __future__ import annotations

import signal

import pytest

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _slow_selected(config: pytest.Config) -> bool:
    expression = str(config.getoption("markexpr") or "")
    return "slow" in expression and "not slow" not in expression


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _slow_selected(config):
        return
    skip = pytest.mark.skip(reason="end-to-end tier: python -m pytest -m slow (a step of .ci/run)")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)
