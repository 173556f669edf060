"""Starting a worker process (harness/execution/worker_process.py): a worker that is gone before it reads
its configuration (a side's interpreter that is no Python, ``ab --base-python /bin/false``; a crash at
start) is found by the first read, as a worker's crash, never a ``BrokenPipeError`` out of the start: click
takes an EPIPE for its own output's pipe closing and ended ``streambench ab`` with exit 1 and no word."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from streambench.harness.execution import worker_process
from streambench.harness.execution.worker_errors import WorkerError
from streambench.harness.execution.worker_process import SharedSlot, WorkerCommand, start_worker


class _GoneAtOnce(subprocess.Popen):  # type: ignore[type-arg]
    """A child that has exited by the time its parent writes to it (the race made certain)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.wait()


@pytest.mark.processes
def test_a_worker_gone_before_its_configuration_is_sent_is_found_by_the_first_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker_process.subprocess, "Popen", _GoneAtOnce)
    process, conn = start_worker(WorkerCommand(python="/bin/false"), "{}" * 100_000, None, SharedSlot())
    with pytest.raises((EOFError, ConnectionResetError)):
        conn.recv_bytes()
    assert process.exitcode == 1


@pytest.mark.processes
def test_an_interpreter_that_cannot_be_started_is_a_worker_error_naming_it() -> None:
    """``ab --base-python /nonexistent/python3``: a ``WorkerError`` naming the interpreter (the command
    line's clear error, after the side's name), not a ``FileNotFoundError`` traceback."""
    with pytest.raises(WorkerError, match=r"^the worker's interpreter '/nonexistent/python3' cannot be"):
        start_worker(WorkerCommand(python="/nonexistent/python3"), "{}", None, SharedSlot())
