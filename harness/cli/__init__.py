"""The ``streambench`` command line: one module per command group, assembled here.

``run`` (run.py) runs a protocol; ``runs`` / ``show`` / ``compare`` / ``reindex`` (results.py) read the run
store; ``report`` (report.py) writes the HTML report; ``sweep`` (sweep.py) runs a sweep file; ``score``
(score.py) re-scores files offline;
``ab`` (ab.py) compares base and head in interleaved rounds; ``adapters`` / ``selftest`` / ``env`` /
``schema`` (system.py).
"""

from __future__ import annotations

import typer

from harness.cli import ab, report, results, run, sweep, system
from harness.cli.score import score_app

__all__ = ["app", "main"]

app = typer.Typer(
    help="streambench: measure causal (streaming) models frame by frame, at batch 1.",
    no_args_is_help=True,
    add_completion=False,
)
run.register(app)
app.add_typer(score_app, name="score")
for group in (sweep, report, results, ab, system):
    group.register(app)


def main() -> None:
    app()
