"""What every ``streambench`` command shares: the two consoles and the one way a clear error ends a
command (the message on stderr, exit code 2, no traceback)."""

from __future__ import annotations

import typer
from rich.console import Console

from harness.io.safe_text import safe

__all__ = ["err", "fail", "out"]

out = Console()
err = Console(stderr=True)


def fail(message: str) -> typer.Exit:
    """Print ``message`` as an error (escaped: it may quote user input) and return the exit to raise."""
    err.print(f"[bold red]error:[/] {safe(message)}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(code=2)
