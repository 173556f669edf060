"""Adapter errors (harness/execution/adapter_errors.py) cross a process pool as themselves."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow  # in the sweep's tier (tests/harness/sweep/test_driver.py): pytest -m slow


def test_an_adapter_error_crosses_the_sweeps_process_pool_as_itself() -> None:
    """A sealed run that fails in an isolated sweep worker raises an AdapterError there (the adapter's
    own worker died, say); unpicklable, it reached the driver as a broken pool ("worker process lost")."""
    import pickle

    from streambench.harness.execution.adapter_errors import AdapterCrashError, AdapterTimeoutError

    crash = AdapterCrashError("faulty", "syn-warmup", 3, "the worker process died", 13, None)
    timeout = AdapterTimeoutError("faulty", "syn-0001", 7, "no answer", "stream", 2.5)
    for error in (crash, timeout):
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and str(again) == str(error) and vars(again) == vars(error)
