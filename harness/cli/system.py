"""``streambench adapters``, ``selftest``, ``env`` and ``schema``: what the harness, the machine and the
result format are, without running a model."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from streambench.harness.cli.common import fail, out
from streambench.harness.io.safe_text import safe

__all__ = ["register"]


def adapters(
    name: Annotated[str | None, typer.Argument(help="an adapter: list its options")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the list or the options as JSON")] = False,
) -> None:
    """List the registered adapters (any importable module:Class works too), or one adapter's options."""
    if name is not None:
        from rich.table import Table

        from streambench.adapters.registry import AdapterLoadError, describe_options

        try:
            rows = describe_options(name)
        except AdapterLoadError as exc:
            raise fail(str(exc)) from None
        if as_json:
            keys = ("option", "type", "default", "description")
            out.print_json(
                json.dumps({"adapter": name, "options": [dict(zip(keys, r, strict=True)) for r in rows]})
            )
            return
        if not rows:
            out.print(f"adapter {safe(name)} takes no options")
            return
        table = Table(title=f"options of {safe(name)} (--option KEY=VALUE)")
        for column in ("option", "type", "default", "description"):
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(safe(cell) for cell in row))
        out.print(table)
        return
    from streambench.adapters.registry import known, plugins

    names = known()
    if as_json:
        out.print_json(json.dumps(dict(sorted(names.items()))))
        return
    width = max(len(entry) for entry in names)
    declared = plugins()
    for entry, target in sorted(names.items()):
        origin = f"  (plug-in: {declared[entry][1]})" if entry in declared else ""
        out.print(f"{entry:<{width}}  {target}{origin}", highlight=False, markup=False)


def selftest(
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """The harness measuring itself: overhead floor (null adapter) and timing error (busy-waits)."""
    from streambench.harness.execution.selftest import SelfTestConfig, print_selftest, run_selftest

    report = run_selftest(SelfTestConfig())
    if as_json:
        out.print_json(report.model_dump_json())
    else:
        print_selftest(out, report)
    raise typer.Exit(code=0 if report.passed else 1)


def env(
    as_json: Annotated[bool, typer.Option("--json", help="print the manifest as JSON")] = False,
) -> None:
    """The environment lock manifest (docs/protocols.md) and its timing fingerprint."""
    from rich.table import Table

    from streambench.harness.instruments.manifest import collect_manifest, fingerprint
    from streambench.harness.instruments.threads import ThreadConfig

    manifest = collect_manifest({}, requested_threads=ThreadConfig())  # a run's default thread setting
    if as_json:
        out.print_json(json.dumps({"fingerprint": fingerprint(manifest), **manifest.model_dump(mode="json")}))
        return
    table = Table(title=f"Environment (fingerprint {fingerprint(manifest)})", title_justify="left")
    table.add_column("item")
    table.add_column("value")
    for name, item in manifest:
        if hasattr(item, "value"):
            shown = (
                safe(str(item.value)) if item.value is not None else f"[dim]null: {safe(str(item.reason))}[/]"
            )
            table.add_row(name, shown)
    out.print(table)


def schema(
    file: Annotated[
        str,
        typer.Argument(
            help="a result file a protocol writes into a run directory, by name or path: result.json "
            "(online), capacity.json, robustness.json, ... (an unknown name lists them)"
        ),
    ] = "result.json",
) -> None:
    """Print the JSON Schema of a result file (default result.json): the pydantic model each registered
    protocol declares for the file it writes (``RunProtocol.result_file`` / ``result_model``). A path is
    taken by its file name (``results/x/capacity.json``)."""
    from pathlib import Path

    from pydantic import BaseModel

    from streambench.harness.runs import registry

    models: dict[str, type[BaseModel]] = {}
    for protocol in registry.protocols():
        models.setdefault(protocol.result_file, protocol.result_model)
    name = Path(file).name
    if name not in models:
        raise fail(f"no protocol writes {file!r}: the result files are {', '.join(models)}")
    out.print_json(json.dumps(models[name].model_json_schema()))


def register(app: typer.Typer) -> None:
    for command in (adapters, selftest, env, schema):
        app.command()(command)
