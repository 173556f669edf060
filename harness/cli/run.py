"""``streambench run``: one run of an adapter through any registered protocol (or ``--resume``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from streambench.harness.cli import completion
from streambench.harness.cli.common import err, fail, out, show_traceback
from streambench.harness.cli.hygiene import command_stdout
from streambench.harness.cli.options import RUN_OPTIONS, declare, refuse_retired, retired_parameters
from streambench.harness.io.safe_text import safe
from streambench.harness.runs import registry

if TYPE_CHECKING:  # the run's machinery (and the progress bar) is imported by the command that runs
    from rich.progress import Progress, TaskID

    from streambench.harness.execution.executor import ProgressHook
    from streambench.harness.runs.contract import Outcome, ProtocolContract


def _parse_options(pairs: list[str], flag: str = "--option") -> dict[str, Any]:
    """``KEY=VALUE`` pairs; a VALUE that parses as JSON is taken as such (numbers, lists, true)."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise fail(f"{flag} {pair!r}: expected KEY=VALUE")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def run(
    ctx: typer.Context,
    protocol: Annotated[
        str,
        typer.Option(
            help="a registered protocol: " + " | ".join(registry.names()), autocompletion=completion.protocols
        ),
    ] = registry.DEFAULT,
    protocol_config: Annotated[
        Path | None,
        typer.Option(help="the protocol's own configuration (.json or .toml): detection, stability, ..."),
    ] = None,
    protocol_option: Annotated[
        list[str] | None,
        typer.Option(
            "--protocol-option",
            "-p",
            help="one field of the protocol's own configuration, KEY=VALUE (repeatable; laid over "
            "--protocol-config, the last of a KEY winning), e.g. -p deadline_ms=40 -p serving=batched",
        ),
    ] = None,
    config_file: Annotated[
        Path | None, typer.Option("--config", help="run configuration (.json or .toml); options override it")
    ] = None,
    resume: Annotated[
        Path | None, typer.Option(help="finish an interrupted run (its directory): same configuration")
    ] = None,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
    report: Annotated[bool, typer.Option(help="write <run dir>/report.html (streambench report)")] = True,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the run's directory, exit code and headline as JSON")
    ] = False,
    **typed_options: Any,  # one per run option (harness/cli/options.py), given to typer by __signature__
) -> None:
    """Run an adapter through a protocol (--protocol; default online) and write results/<run_id>/."""
    from streambench.harness import api
    from streambench.harness.cli.config import CLI_FIELDS, RunOptions, build_run_config, with_protocol_options
    from streambench.harness.io.store_layout import check_results_dir
    from streambench.harness.runs.catalog import check_joinable

    refusal = refuse_retired(typed_options)  # --deadline-ms 40: -p deadline_ms=40 is the one route
    if refusal is not None:
        raise fail(refusal)
    given = {name for name in [*CLI_FIELDS, "protocol"] if _typed(ctx, name)}
    if resume is not None:
        if given or config_file is not None or protocol_config is not None or protocol_option:
            raise fail("--resume takes no other run options: the run's own configuration is used")
        _resume(resume, progress=progress, report=report, as_json=as_json)
        return
    values = {**typed_options, "option": _parse_options(typed_options.get("option") or [])}
    options = RunOptions.model_validate(values)
    given.discard("protocol")
    try:
        config = build_run_config(options, given, config_file)
        chosen = registry.get(protocol)
        check_results_dir(config.output_dir, "--output-dir")
    except ValueError as exc:  # ConfigError, UnknownProtocolError, a file where the results go
        raise fail(str(exc)) from None
    if protocol_config is not None and not chosen.config_file:
        takers = ", ".join(p.name for p in registry.protocols() if p.config_file)
        raise fail(f"--protocol-config applies to {takers}, not to --protocol {protocol}")
    try:
        if chosen.name != registry.DEFAULT:  # the default protocol writes a new run (or refuses an old one)
            check_joinable(config)
        chosen.check_options(config, frozenset(given))
        protocol_settings = chosen.load_config(protocol_config)
        if protocol_option:
            overrides = _parse_options(protocol_option, "--protocol-option")
            protocol_settings = with_protocol_options(chosen, protocol_settings, overrides)
    except ValueError as exc:
        raise fail(str(exc)) from None
    with command_stdout():  # what the model prints goes to stderr
        outcome = _run_with_progress(
            progress,
            f"{config.adapter} · {protocol}",
            # the Python entry point, told which options were typed
            lambda hook: api.run(config, protocol, protocol_settings, hook, frozenset(given)),
        )
        _finish(chosen, outcome, report, as_json)


def _typed(ctx: typer.Context, name: str) -> bool:
    """Whether option ``name`` was typed on the command line (click's ParameterSource, compared by name:
    typer vendors click)."""
    return getattr(ctx.get_parameter_source(name), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")


def _resume(run_dir: Path, progress: bool, report: bool, as_json: bool = False) -> None:
    """``--resume DIR``: the protocol that can finish the run directory finishes it (without one, the
    default protocol says what is missing there)."""
    from streambench.harness import api

    chosen = registry.resumer(run_dir)  # before: a finished run has nothing left to resume
    with command_stdout():
        title = f"resume {run_dir.name}"
        outcome = _run_with_progress(progress, title, lambda hook: api.resume(run_dir, hook))
        _finish(chosen, outcome, report, as_json)


def _finish(
    protocol: ProtocolContract[Any, Any], outcome: Outcome[Any], report: bool, as_json: bool = False
) -> None:
    """Print the result, the file written and the report; exit with the protocol's code. ``as_json``:
    one JSON object instead (run directory, result file, exit code, the run's headline)."""
    if as_json:
        _finish_json(protocol, outcome, report)
        return
    code = protocol.print_result(out, outcome)
    if outcome.unchanged:
        err.print(
            f"\n[bold]nothing to resume:[/] {safe(str(outcome.run_dir))} is complete; nothing was run, "
            f"{safe(protocol.result_file)} is as it was",
            highlight=False,
        )
        if code:
            raise typer.Exit(code=code)
        return
    out.print(f"\nwrote [bold]{safe(str(outcome.run_dir / protocol.result_file))}[/]", highlight=False)
    _write_report(outcome.run_dir, report)
    note = protocol.closing_note(outcome)
    if note is not None:
        err.print(note, highlight=False)
    if code:
        raise typer.Exit(code=code)


def _finish_json(protocol: ProtocolContract[Any, Any], outcome: Outcome[Any], report: bool) -> None:
    import io

    from rich.console import Console

    from streambench.harness.runs.catalog import load_headline

    code = protocol.print_result(Console(file=io.StringIO()), outcome)  # its verdict, not its tables
    if report and not outcome.unchanged:
        _write_report(outcome.run_dir, report, say=err)  # stdout holds the JSON alone
    document = {
        "run_dir": str(outcome.run_dir),
        "result_file": str(outcome.run_dir / protocol.result_file),
        "exit_code": code,
        "unchanged": outcome.unchanged,
        "headline": load_headline(outcome.run_dir).model_dump(mode="json"),
    }
    out.print_json(json.dumps(document))
    if code:
        raise typer.Exit(code=code)


_T = TypeVar("_T")


def _clear_errors() -> tuple[type[BaseException], ...]:
    """Errors whose message says what went wrong and where (an OSError names its file): printed, exit code
    2, no traceback (``--debug`` prints it)."""
    from streambench.adapters.registry import AdapterLoadError
    from streambench.harness.execution.engine import AdapterError
    from streambench.harness.execution.event_log import EventLogError
    from streambench.harness.execution.isolation import WorkerError
    from streambench.harness.results.files import ResultFileError

    return (AdapterLoadError, AdapterError, ValueError, ResultFileError, EventLogError, WorkerError, OSError)


class _BarHook:
    """The run's progress hook (:class:`~streambench.harness.execution.executor.StreamProgress`): the bar
    moves after each stream and, within a stream, whenever the engine reports between two chunks of frames
    (about twice a second; harness/execution/engine.py). The bar is drawn here, from those calls, and never
    by a refresh thread of its own: rich's ``auto_refresh`` thread (10 Hz) would take the GIL from the
    timed loop in process, in the middle of a ``predict()``."""

    def __init__(self, bar: Progress, task: TaskID) -> None:
        self.bar, self.task = bar, task
        self.streams_done = 0

    def __call__(self, done: int, total: int, stream_id: str) -> None:
        self.streams_done = done
        self.bar.update(self.task, completed=done, total=total, stream=safe(stream_id))
        self.bar.refresh()

    def frames(self, stream_id: str, done: int, total: int | None) -> None:
        share = min(done / total, 1.0) if total else 0.0
        where = f"{safe(stream_id)} frame {done}" + (f"/{total}" if total else "")
        self.bar.update(self.task, completed=self.streams_done + share, stream=where)
        self.bar.refresh()


def progress_bar(enabled: bool, console: Console = err) -> Progress:
    """The run's progress bar: on ``console`` (stderr), removed when done, redrawn only by
    :class:`_BarHook` (no refresh thread)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[stream]}"),
        console=console,
        transient=True,
        auto_refresh=False,
        disable=not enabled,
    )


def _run_with_progress(progress: bool, title: str, job: Callable[[ProgressHook], _T]) -> _T:
    """Run ``job`` with a progress bar on stderr; turn the harness's clear errors into exit code 2."""
    from streambench.harness.execution.executor import RunInterrupted as interrupted

    clear = _clear_errors()
    bar = progress_bar(progress)
    with bar:
        hook = _BarHook(bar, bar.add_task(safe(title), total=None, stream=""))
        bar.refresh()
        try:
            return job(hook)
        except clear as exc:
            show_traceback(exc)
            raise fail(str(exc)) from None
        except (KeyboardInterrupt, interrupted) as exc:  # outside the measured window
            show_traceback(exc)
            why = (str(exc) or "Ctrl-C").removeprefix("interrupted").lstrip(": ")
            err.print(f"[bold yellow]interrupted[/] {safe(why)}", highlight=False, soft_wrap=True)
            raise typer.Exit(code=130) from None


def _write_report(run_dir: Path, enabled: bool, say: Console | None = None) -> None:
    """The run's HTML report next to its results; a report that cannot be built costs a warning, never
    the run."""
    if not enabled:
        return
    try:
        from streambench.harness.runs.catalog import write_report

        path = write_report([str(run_dir)], run_dir / "report.html", run_dir.parent)
    except (ValueError, OSError) as exc:
        err.print(f"[yellow]warning:[/] no report written ({safe(str(exc))})", highlight=False)
        return
    (say or out).print(f"wrote [bold]{safe(str(path))}[/]", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(declare(run, RUN_OPTIONS, retired_parameters()))
