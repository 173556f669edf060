"""``streambench data [KIND]``: the data set kinds a run can read (``RunConfig.data.kind``) — modalities,
payload shapes, frame rate, classes, default streams — or one kind with its options (docs/data.md)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from streambench.harness.cli import completion
from streambench.harness.cli.common import fail, out
from streambench.harness.io.safe_text import safe

if TYPE_CHECKING:
    from streambench.harness.datasets.descriptions import DataSetDescription

__all__ = ["register"]

CLASSES_SHOWN = 3
"""Class names shown in the listing of every kind (``streambench data KIND`` shows them all)."""


def _payloads(about: DataSetDescription) -> str:
    parts = []
    for p in about.payloads:
        shape = "[" + ", ".join(str(n) for n in p.shape) + "]" if p.shape is not None else "(from the files)"
        parts.append(f"{p.modality} {p.dtype} {shape}")
    return ", ".join(parts)


def _rate(about: DataSetDescription) -> str:
    rate = about.frame_rate_hz
    if rate is None:
        return "from the files (a rate, or each frame's timestamp)"
    return f"{rate:g} frame{'' if rate == 1 else 's'}/s ({1000 / rate:g} ms per frame)"


def _classes(about: DataSetDescription, limit: int | None) -> str:
    """``29: background, Church bell, ...``; a name holding a comma is quoted."""
    if about.classes is None:
        return "from the files" if limit is not None else f"from the files: {about.classes_note}"
    names = about.classes if limit is None else about.classes[:limit]
    shown = ", ".join(f'"{n}"' if "," in n else n for n in names)
    more = "" if len(names) == len(about.classes) else f", ... (+{len(about.classes) - len(names)})"
    return f"{about.num_classes}: {shown}{more}"


def _print_all(kinds: list[DataSetDescription]) -> None:
    from rich.table import Table

    table = Table(
        title="Data set kinds (--dataset KIND, or data.kind in a --config file)", title_justify="left"
    )
    table.add_column("kind", no_wrap=True)  # names stay whole, to be copied
    for column in ("payloads", "frame rate", "classes", "default streams"):
        table.add_column(column, overflow="fold")
    for about in kinds:
        table.add_row(
            safe(about.kind),
            safe(_payloads(about)),
            safe(_rate(about)),
            safe(_classes(about, CLASSES_SHOWN)),
            safe(about.default_streams),
        )
    out.print(table)
    out.print("streambench data KIND: one kind in full, with its options; docs/data.md", highlight=False)


def _print_one(about: DataSetDescription) -> None:
    from rich.table import Table

    facts = Table(
        title=f"data set {safe(about.kind)}: {safe(about.summary)}", title_justify="left", show_header=False
    )
    facts.add_column("what", style="bold")
    facts.add_column("value", overflow="fold")
    notes = "; ".join(f"{p.modality}: {p.note}" for p in about.payloads if p.note)
    rows = [
        ("modalities", ", ".join(about.modalities)),
        ("payloads", _payloads(about) + (f" ({notes})" if notes else "")),
        ("frame rate", _rate(about)),
        ("segment length", "none" if about.segment_length_s is None else f"{about.segment_length_s:g} s"),
        ("classes", _classes(about, None)),
        ("", about.classes_note if about.classes is not None else ""),
        ("labels", about.labels),
        ("default streams", about.default_streams),
        ("described from", about.described_from),
    ]
    for name, value in rows:
        if value:
            facts.add_row(name, safe(value))
    out.print(facts)
    options = Table(
        title=f"options of {safe(about.kind)} (data.<option> in a --config file)", title_justify="left"
    )
    options.add_column("option", no_wrap=True)
    for column in ("type", "default", "description"):
        options.add_column(column, overflow="fold")
    for row in about.options:
        options.add_row(safe(row.option), safe(row.type), safe(row.default), safe(row.description))
    out.print(options)


def data(
    kind: Annotated[
        str | None,
        typer.Argument(
            help="a data set kind: describe it in full, with its options",
            autocompletion=completion.data_kinds,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the kinds, or the one kind, as JSON")
    ] = False,
) -> None:
    """The data set kinds: modalities, payload shapes, frame rate, classes and default streams; one kind's
    options (types, defaults, descriptions)."""
    from streambench.harness.datasets.descriptions import UnknownDataSetError, describe, describe_all

    if kind is None:
        kinds = describe_all()
        if as_json:
            out.print_json(json.dumps([about.model_dump(mode="json") for about in kinds]))
        else:
            _print_all(kinds)
        return
    try:
        about = describe(kind)
    except UnknownDataSetError as exc:
        raise fail(str(exc.args[0])) from None
    if as_json:
        out.print_json(about.model_dump_json())
    else:
        _print_one(about)


def register(app: typer.Typer) -> None:
    app.command()(data)
