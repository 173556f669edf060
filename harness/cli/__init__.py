"""The ``streambench`` command line: one module per command group, assembled here.

``run`` (run.py) runs a protocol; ``runs`` / ``show`` / ``compare`` / ``reindex`` (results.py) read the run
store; ``report`` (report.py) writes the HTML report; ``sweep`` (sweep.py) runs a sweep file; ``score``
(score.py) re-scores files offline; ``adapters`` / ``selftest`` / ``env`` / ``schema`` (system.py).
"""

from __future__ import annotations

from typing import Annotated

import typer

from harness.cli import report, results, run, sweep, system
from harness.cli.common import set_debug
from harness.cli.score import score_app

__all__ = ["app", "main"]

app = typer.Typer(
    help="streambench: measure causal (streaming) models frame by frame, at batch 1.",
    no_args_is_help=True,
    add_completion=False,
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
for group in (sweep, report, results, system):
    group.register(app)


def main() -> None:
    app()
