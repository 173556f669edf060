"""The suite's tiers (README, "Testing"). ``python -m pytest`` (the README's test command) is the fast
tier: every test that starts no process. Two more tiers run in their own step of ``.ci/run``,
``python -m pytest -m "processes or slow"``, so CI runs everything:

- ``processes``: a test that starts a process (a sealed or isolated worker, a subprocess, a command whose
  run starts a worker, a multiprocessing child, a ``git`` call of the environment manifest);
- ``slow``: end-to-end tests that drive the CLI through subprocesses, signals and sweeps, install wheels,
  or search on long simulated clocks.

A tier runs when a ``-m`` expression selects its mark (names it, not as ``not processes``), and is
skipped with the reason otherwise. In a run that skips the ``processes`` tier, a test that starts a
process without one of the marks (``processes``, ``slow``, ``docs_commands``) fails, naming what it
started, so the fast tier cannot drift into the slower ones. Processes are seen through the interpreter's
audit events (``subprocess.Popen``, ``os.fork``, ``os.forkpty``, ``os.posix_spawn``, ``os.spawn``,
``os.system``) and multiprocessing's ``spawnv_passfds``, which the spawn and forkserver contexts start
their children with and which raises no audit event.

A suite started where SIGINT is ignored (a background job of a non-interactive shell: ``cmd &`` in a
script, ``nohup``) would pass that on to every process the tests start, and the tests that send Ctrl-C to
a run, a sweep or a process group would see it ignored (seen: five slow tests, exit 0 instead of 130).
The tests establish their precondition: SIGINT is Python's default in this process, so its children
start with the default too."""

from __future__ import annotations

import contextlib
import multiprocessing.util
import os
import signal
import sys
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

PROCESS_MARKS = ("processes", "slow", "docs_commands")
"""A test with one of these marks may start processes."""
_PROCESS_EVENTS = ("subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system")

_started: list[str] | None = None
"""What the running unmarked test started; None while no such test runs."""


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _started is not None and event in _PROCESS_EVENTS:
        shown = args[1] if event == "subprocess.Popen" and len(args) > 1 else args[:1]
        _started.append(f"{event} {str(shown)[:160]}")


sys.addaudithook(_audit)  # for the session: an audit hook cannot be removed; it records only when asked
_spawnv_passfds: Callable[..., int] = multiprocessing.util.spawnv_passfds


def _spawn_watched(path: Any, args: Any, passfds: Any) -> int:
    if _started is not None:
        _started.append(f"multiprocessing child {str(list(args))[:160]}")
    return _spawnv_passfds(path, args, passfds)


multiprocessing.util.spawnv_passfds = _spawn_watched


def _selected(config: pytest.Config, mark: str) -> bool:
    """Whether the run's ``-m`` expression selects the tier ``mark`` (names it, not as ``not mark``)."""
    expression = str(config.getoption("markexpr") or "")
    return mark in expression and f"not {mark}" not in expression


def _watched(config: pytest.Config) -> bool:
    """Whether this run watches for processes: one that skips the ``processes`` tier (the fast tier), or
    one asked to list them (``STREAMBENCH_PROCESS_LOG``)."""
    return not _selected(config, "processes") or bool(PROCESS_LOG)


@contextlib.contextmanager
def _watching(item: pytest.Item) -> Iterator[list[str]]:
    global _started
    if not _watched(item.config) or any(item.get_closest_marker(mark) is not None for mark in PROCESS_MARKS):
        yield []
        return
    _started = []
    try:
        yield _started
    finally:
        _started = None


PROCESS_LOG = os.environ.get("STREAMBENCH_PROCESS_LOG")
"""A file: list the unmarked tests that start processes there (one line each: test, phase, the first
process) instead of failing them, to mark a suite's tests at once."""


def _refuse(item: pytest.Item, phase: str, started: list[str]) -> None:
    if started and PROCESS_LOG:
        with open(PROCESS_LOG, "a", encoding="utf-8") as log:
            log.write(f"{item.nodeid}\t{phase}\t{len(started)}\t{started[0]}\n")
        return
    if started:
        pytest.fail(
            f"{item.nodeid} started {len(started)} process(es) in its {phase} without the `processes` mark "
            f"(the fast tier, -m 'not processes', starts none): {started[0]}",
            pytrace=False,
        )


def _watch_phase(item: pytest.Item, phase: str) -> Generator[None, Any, Any]:
    """The body of the three phase wrappers below: run the phase watched, refuse what it started."""
    with _watching(item) as started:
        result = yield
    _refuse(item, phase, started)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _watch_phase(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _watch_phase(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    return (yield from _watch_phase(item, "teardown"))


TIERS = {
    "slow": "end-to-end tier: python -m pytest -m slow (a step of .ci/run)",
    "processes": "starts processes: python -m pytest -m processes (a step of .ci/run)",
}
"""The tiers ``python -m pytest`` skips, and why (the reason pytest prints)."""


PROCESS_FIXTURES = {
    "tests/harness/cli/test_cli_output.py": {"results"},
    "tests/harness/cli/test_cli_startup.py": {"ours", "results"},
    "tests/harness/datasets/test_catalog_secret_seed.py": {"store"},
    "tests/harness/execution/test_isolation.py": {"fault_run"},
    "tests/harness/execution/test_sandbox.py": {"sandboxed", "control"},
    "tests/harness/instruments/test_manifest.py": {"manifest"},
    "tests/harness/report/test_decision.py": {"root"},
    "tests/harness/report/test_report.py": {"reports", "root"},
    "tests/harness/report/test_report_browser.py": {"driver", "reports"},
    "tests/harness/results/test_compare.py": {"busy"},
    "tests/harness/results/test_files_fuzz.py": {"run_files"},
    "tests/harness/results/test_hardware.py": {"two_machines", "measured"},
    "tests/harness/results/test_markdown.py": {"run"},
    "tests/harness/results/test_store.py": {"results", "copy"},
    "tests/harness/results/test_store_faults.py": {"copy"},
    "tests/harness/runs/test_catalog_headline.py": {"online"},
    "tests/harness/runs/test_detection.py": {"seed0"},
    "tests/harness/runs/test_hysteresis.py": {"full"},
    "tests/harness/runs/test_listing.py": {"results"},
}
"""Shared fixtures (module-scoped) that start processes, by test file: every test that uses one is in the
``processes`` tier, whichever of them happens to build it first."""


def _mark_process_fixtures(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        path = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        if PROCESS_FIXTURES.get(path, set()) & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.processes)


@pytest.hookimpl(tryfirst=True)  # before -m selects by the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _mark_process_fixtures(config, items)
    skips = {mark: pytest.mark.skip(reason=why) for mark, why in TIERS.items() if not _selected(config, mark)}
    for item in items:
        tier = "slow" if item.get_closest_marker("slow") is not None else "processes"  # slow: its own tier
        if tier in skips and item.get_closest_marker(tier) is not None:
            item.add_marker(skips[tier])
