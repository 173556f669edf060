"""The ``streambench`` command line: one module per command group, assembled here.

``run`` (run.py) runs a protocol; ``runs`` / ``show`` / ``compare`` / ``reindex`` (results.py) read the run
store; ``report`` (report.py) writes the HTML report; ``sweep`` (sweep.py) runs a sweep file; ``score``
(score.py) re-scores files offline;
``ab`` (ab.py) compares base and head in interleaved rounds; ``data`` (data.py) describes the data set
kinds; ``adapters`` / ``selftest`` / ``env`` / ``schema`` (system.py).
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType


def _during_startup(signum: int, frame: FrameType | None) -> None:
    """SIGTERM or Ctrl-C while the command's modules import (a second or more): say so, exit 130."""
    name = signal.Signals(signum).name
    sys.stderr.write(f"streambench: interrupted ({name}) while starting up; nothing was run or written\n")
    raise SystemExit(130)


_BEFORE: dict[signal.Signals, object] = {}
if threading.current_thread() is threading.main_thread():  # first, before the imports below
    for _signum in (signal.SIGTERM, signal.SIGINT):
        if signal.getsignal(_signum) is not signal.SIG_IGN:  # an ignored SIGINT (a background job) stays
            _BEFORE[_signum] = signal.signal(_signum, _during_startup)

from typing import Annotated  # noqa: E402

import typer  # noqa: E402

from streambench.harness.cli import ab, data, hardware, report, results, run, sweep, system  # noqa: E402
from streambench.harness.cli.common import set_debug  # noqa: E402
from streambench.harness.cli.hygiene import adopt_orphans, leave  # noqa: E402
from streambench.harness.cli.score import score_app  # noqa: E402

__all__ = ["app", "main"]

app = typer.Typer(
    help="streambench: measure causal (streaming) models frame by frame, at batch 1.",
    no_args_is_help=True,
    add_completion=True,
)


@app.callback()
def _options(
    debug: Annotated[
        bool, typer.Option("--debug", help="on an error, print the full traceback of its cause as well")
    ] = False,
) -> None:
    """Options of every command (before the command's name: ``streambench --debug run ...``)."""
    set_debug(debug)


run.register(app)
app.add_typer(score_app, name="score")
for group in (sweep, report, results, hardware, ab, data, system):
    group.register(app)


for _signum, _handler in _BEFORE.items():  # imported (by a test, a plug-in): the importer's handlers again
    signal.signal(_signum, _handler if _handler is not None else signal.SIG_DFL)  # type: ignore[arg-type]


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def main() -> None:
    """The ``streambench`` entry point. SIGTERM is Ctrl-C from here on: a run in its measured window
    writes a partial result (streambench.harness.execution.executor.interrupt_on_sigterm), while scoring it
    finishes the result first (defer_signals), elsewhere the command ends with exit code 130 and a word. What
    a model leaves behind does not outlive the command, nor keep it from exiting (harness/cli/hygiene.py)."""
    signal.signal(signal.SIGTERM, _terminated)
    adopt_orphans()
    try:
        app()
    except SystemExit as exc:
        why = _unreported_interruption(exc)
        if why is not None:  # typer ends a KeyboardInterrupt no command caught with 130 and no word
            sys.stderr.write(f"streambench: interrupted ({why}); the command did not finish\n")
        leave(exc.code)  # its children ended; with a model's non-daemon thread left, exits here
        raise


def _unreported_interruption(exc: SystemExit) -> str | None:
    """The signal's name when ``exc`` is typer's exit 130 for a KeyboardInterrupt that no command caught
    (e.g. while a command imports its modules); None for any other exit."""
    cause = exc.__context__.__cause__ if exc.__context__ is not None else None
    if exc.code != 130 or not isinstance(cause, KeyboardInterrupt):
        return None
    return str(cause).removeprefix("signal ") or "SIGINT"
