"""Issue 18, "Rich markup from a model": every string a model, a configuration or a file controls is
printed as text: Rich markup shown literally (never parsed, so a stray ``[/bold]`` cannot crash the CLI
after the result is written), terminal escape codes neutralised."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.cli import run as run_cli
from streambench.harness.io.safe_text import plain, safe
from tests.support import HOSTILE

CONTROL = ("\x1b", "\x9b", "\x07")


def test_safe_keeps_the_words_and_drops_the_control() -> None:
    text = safe(HOSTILE)
    assert not any(c in text for c in CONTROL)
    assert "owned" not in text  # a window title set by OSC is removed whole
    printed = io.StringIO()
    Console(file=printed, width=200).print(text, highlight=False)
    assert printed.getvalue().strip() == "[/bold][red]x[/red][link=file:///etc]y[/link]\\x07"
    assert plain("tab\tand\nnewline stay; NUL \x00 shows") == "tab\tand\nnewline stay; NUL \\x00 shows"


@pytest.mark.processes
def test_a_hostile_adapter_name_error_and_run_id_print_as_text(tmp_path: Path) -> None:
    args = ["run", "--adapter", "tests.support:HostileAdapter", "--streams", "3", "--duration", "5"]
    args += [
        "--warmup-frames",
        "0",
        "--output-dir",
        str(tmp_path),
        "--run-id",
        "[bold]run[red]",
        "--no-progress",
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 1, res.output  # one stream failed; the summary and the report were written
    assert ("Traceback" not in res.output and res.exception is None) or isinstance(res.exception, SystemExit)
    assert not any(c in res.output for c in CONTROL)
    flat = "".join(res.output.split())  # Rich wraps long lines at the terminal's width
    assert "adapter[/bold][red]x[/red][link=file:///etc]y[/link]" in flat  # the name, literally
    assert "weights[/bold][red]x[/red]" in flat  # the failure's message, literally
    assert "[bold]run[red]" in flat and (tmp_path / "[bold]run[red]" / "report.html").is_file()


def test_the_progress_line_shows_a_hostile_title_and_stream_id_as_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    screen = io.StringIO()
    monkeypatch.setattr(run_cli, "err", Console(file=screen, force_terminal=True, width=200))

    def job(hook: run_cli.ProgressHook) -> int:
        hook(1, 2, f"stream{HOSTILE}")
        return 7

    assert run_cli._run_with_progress(True, f"{HOSTILE} · online", job) == 7
    assert "\x1b[2J" not in screen.getvalue() and "owned" not in screen.getvalue()
