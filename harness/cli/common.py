"""What every ``streambench`` command shares: the two consoles, the one way a clear error ends a command
(the message on stderr, exit code 2, no traceback; the traceback only with the global ``--debug``) and
the checks of paths given on the command line."""

from __future__ import annotations

import os
import traceback

import typer
from rich.console import Console, ConsoleDimensions

from streambench.harness.io.safe_text import plain, safe

__all__ = ["err", "fail", "out", "set_debug", "show_traceback"]

NON_TERMINAL_WIDTH = 200
"""Columns of output that goes to no terminal (a CI log, a file): rich's 80 would clip tables."""


class _Console(Console):
    """A rich console that, with no terminal to ask and no ``COLUMNS`` set, lays out ``NON_TERMINAL_WIDTH``
    columns instead of rich's 80, so a table in a CI log keeps its columns whole."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self._width is None and "COLUMNS" not in self._environ and not any(_tty(fd) for fd in (0, 1, 2)):
            return ConsoleDimensions(max(size.width, NON_TERMINAL_WIDTH), size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


def _tty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


out = _Console()
err = _Console(stderr=True)
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
