"""What every ``streambench`` command shares: the two consoles, the one way a clear error ends a command
(the message on stderr, exit code 2, no traceback; the traceback only with the global ``--debug``) and
the checks of paths given on the command line."""

from __future__ import annotations

import traceback
from pathlib import Path

import typer
from rich.console import Console

from harness.io.safe_text import plain, safe

__all__ = ["check_output_dir", "err", "fail", "out", "set_debug", "show_traceback"]

out = Console()
err = Console(stderr=True)
_debug = {"on": False}


def set_debug(on: bool) -> None:
    """``streambench --debug``: clear errors print the traceback of their cause as well."""
    _debug["on"] = on


def show_traceback(exc: BaseException) -> None:
    """With ``--debug``: the full traceback of ``exc`` and its causes (the model's own frames, and an
    isolated worker's traceback, are in them); without it, nothing."""
    if not _debug["on"]:
        return
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    err.print(plain(text), markup=False, highlight=False, soft_wrap=True)


def fail(message: str) -> typer.Exit:
    """Print ``message`` as an error (escaped: it may quote user input) and return the exit to raise."""
    err.print(f"[bold red]error:[/] {safe(message)}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(code=2)


def check_output_dir(path: Path, option: str = "--output-dir") -> None:
    """Refuse an output directory that cannot be one (it, or the first of its ancestors that exists, is
    a file) before anything runs, naming the option and the path."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            if not candidate.is_dir():
                what = "is a file" if candidate == path else f"is inside {candidate}, which is a file"
                raise fail(f"{option} {path}: {what}, not a directory")
            return
