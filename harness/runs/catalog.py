"""A run directory read through the protocol registry: which result files it holds, its headline, its
place in the run store, its report bundle (DESIGN.md "Results").

The results room below knows files and the SQLite index but no protocol; this module joins them with
:func:`streambench.harness.runs.registry.protocols`, so a protocol added to the registry is listed by
``runs``, compared by ``compare`` and drawn by ``report`` with no change here.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from streambench.harness.results import store
from streambench.harness.results.headline import DataRecord, Figure, RunHeadline, run_title
from streambench.harness.results.store import ReindexReport, StoreError
from streambench.harness.runs import registry

if TYPE_CHECKING:  # imported by the functions that read or write result files: listing runs reads the index
    from streambench.harness.datasets.catalog import SeedKind
    from streambench.harness.execution.config import RunConfig
    from streambench.harness.report.bundle import RunBundle
    from streambench.harness.results.files import RunResult

__all__ = [
    "check_joinable",
    "data_record",
    "figure_keys",
    "figures_of",
    "fix_data_seed",
    "has_results",
    "index_run",
    "index_runs",
    "index_written",
    "list_runs",
    "load_bundle",
    "load_headline",
    "measured_differences",
    "read_runs",
    "reindex",
    "resolve_run",
    "result_files",
    "scan_runs",
    "write_indexed",
    "write_report",
]


def result_files() -> list[str]:
    """The result file of every registered protocol, in listing order (a built-in protocol's is known
    without importing it: :func:`streambench.harness.runs.registry.result_file`)."""
    return [registry.result_file(name) for name in registry.names()]


def has_results(run_dir: Path, files: Sequence[str] | None = None) -> bool:
    """Whether ``run_dir`` holds a result file (of ``files``; None: every registered protocol's)."""
    return any((run_dir / name).is_file() for name in (result_files() if files is None else files))


def load_headline(run_dir: Path) -> RunHeadline:
    """Read every result file of a run directory and extract its headline; names the file on error."""
    from streambench.harness.instruments.threads import thread_summary
    from streambench.harness.results.files import ResultFileError, RunResult
    from streambench.harness.results.quality import MeasurementQuality

    if not run_dir.is_dir():
        raise ResultFileError(f"{run_dir}: no such run directory")
    found: list[tuple[str, BaseModel]] = []
    figures, notes, captions = [], [], []
    for name in registry.names():  # only the protocols whose files are there are imported
        if not (run_dir / registry.result_file(name)).is_file():
            continue
        protocol = registry.get(name)
        result = protocol.load_result(run_dir)
        found.append((protocol.name, result))
        figures.extend(protocol.headline(result))
        notes.extend(protocol.warnings(result))
        if protocol.caption is not None:
            captions.append(protocol.caption)
    if not found:
        raise ResultFileError(f"{run_dir}: holds none of {', '.join(result_files())}")
    first = found[0][1]  # every result model records run_id, created_at and adapter
    fingerprint = next((f for _, r in found if isinstance(f := getattr(r, "fingerprint", None), str)), None)
    when: datetime = getattr(first, "created_at")  # noqa: B009
    created = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    files = " and ".join(registry.get(name).result_file for name, _ in found)
    quality = next(
        (q for _, r in found if isinstance(q := getattr(r, "measurement_quality", None), MeasurementQuality)),
        None,
    )
    return RunHeadline(
        run=run_dir.name,
        run_id=str(getattr(first, "run_id")),  # noqa: B009
        protocols=[name for name, _ in found],
        adapter=str(getattr(first, "adapter")),  # noqa: B009
        name=next((n for _, r in found if (n := model_name(r)) is not None), None),
        created_at=created.astimezone(timezone.utc),
        fingerprint=fingerprint,
        fingerprint_reason=None if fingerprint is not None else f"{files} record no environment fingerprint",
        figures=figures,
        measurement=quality,
        warnings=notes,
        captions=captions,
        data=next((d for _, r in found if (d := data_record(r)) is not None), None),
        execution=next((m for _, r in found if (m := execution_mode_of(r)) is not None), None),
        threads=next((thread_summary(r.threads) for _, r in found if isinstance(r, RunResult)), None),
    )


def model_name(result: BaseModel) -> str | None:
    """The model's name a result records: the user's ``name`` adapter option where given, else the
    adapter's ``AdapterInfo.name`` (``adapter_info``, ``adapter_name``); None where it records neither."""
    run = getattr(result, "run", None)
    options = getattr(result, "adapter_options", None) or getattr(run, "adapter_options", None)
    if isinstance(options, dict) and isinstance(options.get("name"), str) and options["name"]:
        return str(options["name"])
    info = getattr(result, "adapter_info", None)
    name = getattr(info, "name", None) or getattr(result, "adapter_name", None)
    return name if isinstance(name, str) else None


def execution_mode_of(result: BaseModel) -> str | None:
    """Where a result's adapter ran (sealed, isolated, in-process); None where an older file says not."""
    from streambench.harness.results.files import RunResult
    from streambench.harness.results.trust import execution_label

    if isinstance(result, RunResult):
        return execution_label(result.execution.mode, result.execution.sandbox)
    mode = getattr(result, "execution_mode", None)
    return mode if isinstance(mode, str) else None


def data_record(result: BaseModel) -> DataRecord | None:
    """The data a protocol's result scored (:class:`DataRecord`): read off the online result's seeds,
    or any other result's run configuration and manifest; None where the result records neither."""
    from streambench.harness.datasets.provenance import framing_of
    from streambench.harness.execution.config import RunConfig
    from streambench.harness.results.files import EnvironmentRecord, RunResult

    if isinstance(result, RunResult):
        return DataRecord(
            kind=result.dataset,
            hash=_text(result.environment.data_hash.value),
            seed=result.seeds.dataset,
            seed_kind=result.seeds.dataset_seed_kind,
            framing=framing_of(result.dataset_config),
        )
    run = getattr(result, "run", None)
    if not isinstance(run, RunConfig) or not isinstance(result, EnvironmentRecord):
        return None
    environment = result.environment
    return DataRecord(
        kind=run.data.kind,
        hash=_text(environment.data_hash.value) if environment is not None else None,
        seed=getattr(run.data, "seed", None),
        seed_kind=result.dataset_seed_kind,
        framing=framing_of(run.data),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def figure_keys() -> list[tuple[str, str]]:
    """Each protocol's headline keys (a regular expression, how to write them), for ``--fail-on``; empty
    (no check before the runs are read) when a protocol does not declare its keys."""
    keys = [p.figure_keys for p in registry.protocols()]
    return keys if all(pattern for pattern, _ in keys) else []


def index_run(run_dir: Path) -> RunHeadline:
    """Read a run directory's results and upsert its headline into ``<run_dir>/../index.sqlite``: the
    index of the results directory that holds it, a symbolic link's target's never."""
    run_dir = Path(os.path.abspath(run_dir))
    head = load_headline(run_dir)  # read before the transaction: it stays short
    store.upsert(run_dir.parent, head)
    return head


def measured_differences(scored: RunResult, config: RunConfig) -> list[str]:
    """What ``config`` measures that the online run ``scored`` did not: its adapter, adapter options,
    data set, or the content of a model file the options name (a file retrained in place keeps its path;
    compared where the run recorded the files' hashes). Empty when they are the same measurement. An
    unset data seed joins the run's secret one (:func:`fix_data_seed` reuses it)."""
    data = config.data.model_dump(mode="json")
    if data.get("seed", 0) is None and scored.seeds.dataset_seed_kind == "secret":
        data["seed"] = scored.seeds.dataset
    differences = [
        what
        for what, before, now in (
            ("adapter", scored.adapter, config.adapter),
            ("adapter options", scored.adapter_options, config.adapter_options),
            ("data set", scored.dataset_config, data),
        )
        if before != now
    ]
    recorded = scored.environment.model_files.value
    if not differences and isinstance(recorded, dict):
        from streambench.harness.instruments.model_files import model_files

        now = model_files(config.adapter_options)
        for option, entry in recorded.items():
            digest = entry.get("sha256") if isinstance(entry, dict) else None
            if option not in now or now[option]["sha256"] != digest:
                where = entry.get("path") if isinstance(entry, dict) else option
                differences.append(f"model file {option} ({where}: its content changed or it is gone)")
    return differences


def check_joinable(config: RunConfig) -> None:
    """Refuse to add a protocol's result to a run directory whose scored (online) run measured another
    adapter, other adapter options or other data (a reference robustness run written into a
    GRU's run would be shown as the GRU's), and a run directory that is a symbolic link (it would write
    outside the store). Nothing else to check for a new run directory."""
    if config.run_id is None:
        return
    from streambench.harness.io.store_layout import check_run_dir
    from streambench.harness.results.files import RESULT_FILE, ResultFileError, load_result

    check_run_dir(config.output_dir / config.run_id)
    path = config.output_dir / config.run_id / RESULT_FILE
    if not path.is_file():
        return
    try:
        scored = load_result(path)
    except ResultFileError:
        return  # an unreadable result is reported where it is read; it cannot vouch either way
    differences = measured_differences(scored, config)
    if differences:
        raise ValueError(
            f"{path.parent}: this run measured adapter {scored.adapter!r} with its own options, data and "
            "model files; "
            f"this job has another {', '.join(differences)}. Results of two configurations would be shown "
            "as one run: use another --run-id, or the run's own settings"
        )


def fix_data_seed(config: RunConfig) -> tuple[RunConfig, SeedKind | None]:
    """The run configuration with its data set's seed fixed, and that seed's kind
    (:func:`streambench.harness.datasets.catalog.seeded`): called once per run by each protocol, in the
    harness's process, before any stream is built. An unset seed of a job that joins an existing run directory
    (``--run-id`` of an online run with a secret seed) takes that run's seed, so both results score the
    same streams; otherwise a new secret one is drawn."""
    from streambench.harness.datasets.catalog import seeded
    from streambench.harness.results.files import RESULT_FILE, ResultFileError, load_result

    secret = None
    if getattr(config.data, "seed", 0) is None and config.run_id is not None:
        path = config.output_dir / config.run_id / RESULT_FILE
        if path.is_file():
            try:
                scored = load_result(path)
            except ResultFileError:
                scored = None  # an unreadable result vouches for nothing: a new draw
            if scored is not None and scored.seeds.dataset_seed_kind == "secret":
                secret = scored.seeds.dataset
    data, kind = seeded(config.data, secret)
    return config.model_copy(update={"data": data}), kind


def write_indexed(output_dir: Path, run_id: str, filename: str, result: BaseModel) -> Path:
    """Write a protocol's result file (:func:`~streambench.harness.results.files.write_protocol_result`) and
    index the run; returns the run directory."""
    from streambench.harness.results.files import write_protocol_result

    run_dir = write_protocol_result(output_dir, run_id, filename, result)
    index_written(run_dir)
    return run_dir


def index_runs(run_dirs: Sequence[Path]) -> int:
    """Index run directories (all under one results directory); each in its own short transaction."""
    for run_dir in run_dirs:
        index_run(run_dir)
    return len(run_dirs)


def figures_of(result: BaseModel) -> list[Figure]:
    """The headline figures of any registered protocol's result."""
    for protocol in registry.protocols():
        if isinstance(result, protocol.result_model):
            return protocol.headline(result)
    raise TypeError(f"{type(result).__name__} is the result of no registered protocol")


def index_written(run_dir: Path) -> None:
    """Index a run just written. The files are there already: an index that cannot be updated costs a
    warning, never the result (``streambench reindex`` repairs it)."""
    try:
        index_run(run_dir)
    except Exception as exc:  # any failure of the index must leave the written run intact
        warnings.warn(
            f"{run_dir}: written, but not indexed ({type(exc).__name__}: {exc}); "
            "`streambench reindex` rebuilds the index",
            RuntimeWarning,
            stacklevel=2,
        )


def _run_dirs(results_dir: Path) -> list[Path]:
    if not results_dir.is_dir():
        raise StoreError(f"{results_dir}: no such results directory")
    files = result_files()  # once: the plug-ins' entry points are read from the installed metadata
    return sorted(p for p in results_dir.iterdir() if p.is_dir() and has_results(p, files))


def reindex(results_dir: Path) -> ReindexReport:
    """Rebuild the index from the run directories: drop everything, then insert every readable run. A
    damaged index is moved aside first (the report says where); one that cannot be written raises
    :class:`~streambench.harness.results.store.IndexUnusable` and stays as it was."""
    heads, skipped = read_runs(results_dir)
    moved = store.rebuild(results_dir, heads)
    return ReindexReport(
        indexed=[h.run for h in heads], skipped=skipped, moved_aside=str(moved) if moved else None
    )


def read_runs(results_dir: Path) -> tuple[list[RunHeadline], dict[str, str]]:
    """The headline of every run directory, read from the directories alone (no index), newest first;
    and the directories that could not be read, with the reason."""
    from streambench.harness.results.files import ResultFileError

    heads, skipped = [], {}
    for run_dir in _run_dirs(results_dir):
        try:
            heads.append(load_headline(run_dir))
        except ResultFileError as exc:
            skipped[run_dir.name] = str(exc)
    heads.sort(key=lambda h: (h.created_at, h.run), reverse=True)  # the index's order
    return heads, skipped


def list_runs(results_dir: Path, sync: bool = True) -> list[RunHeadline]:
    """Every indexed run, newest first. With ``sync``, run directories not yet in the index (written by
    an older streambench, or copied in) are indexed first, and rows whose directory is gone are left out."""
    return scan_runs(results_dir, sync)[0]


def scan_runs(results_dir: Path, sync: bool = True) -> tuple[list[RunHeadline], dict[str, str]]:
    """:func:`list_runs`, plus the run directories that could not be read, with the reason."""
    present = {p.name: p for p in _run_dirs(results_dir)}
    if not sync:
        return store.indexed(results_dir), {}
    heads, unreadable = store.sync(results_dir, present, load_headline)
    return [h for h in heads if h.run in present], unreadable


def resolve_run(ref: str, results_dir: Path) -> Path:
    """A run directory from a reference: a path to a run directory (or to a result file in one), a run
    id under ``results_dir``, or a unique prefix of one. Errors list the candidates ("did you mean")."""
    given = Path(ref)
    if given.is_file() and has_results(given.parent):
        return given.parent
    if given.is_dir() and has_results(given):
        return given
    if not results_dir.is_dir():
        raise StoreError(f"run {ref!r}: not a run directory, and {results_dir} does not exist")
    names = [p.name for p in _run_dirs(results_dir)]
    if ref in names:
        return results_dir / ref
    matches = [n for n in names if n.startswith(ref)] if ref else []
    if len(matches) == 1:
        return results_dir / matches[0]
    if len(matches) > 1:
        shown = ", ".join(sorted(matches)[:8]) + (" ..." if len(matches) > 8 else "")
        raise StoreError(
            f"run {ref!r} is ambiguous in {results_dir}: {len(matches)} runs start with it ({shown})"
        )
    for where in (given, results_dir / ref if ref else given):  # a path, or a run id whose result is gone
        if where.is_dir():
            files = result_files()
            raise StoreError(f"{where}: a directory, but it holds no {', '.join(files[:-1])} or {files[-1]}")
    close = store.close_matches(ref, names)
    close += [n for n in names if ref and ref in n and n not in close][: 3 - len(close)]
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    known = f" ({len(names)} runs there; `streambench runs` lists them)" if names else " (it holds no runs)"
    raise StoreError(f"run {ref!r}: no such run directory or run id in {results_dir}{known}{hint}")


def load_bundle(run_dir: Path) -> RunBundle:
    """Everything the report draws of ``run_dir``, read by each registered protocol; a missing or broken
    part becomes a reason, not an error. A protocol with no sections of its own is listed by its headline
    figures."""
    from streambench.harness.report.bundle import RunBundle

    bundle = RunBundle(run_dir=run_dir, name=run_dir.name)
    for protocol in registry.protocols():
        protocol.read(run_dir, bundle)
        sections = protocol.report_sections()
        bundle.add_sections(protocol.name, sections)
        if not sections:
            bundle.others[protocol.name] = protocol.result_file
        loaded = bundle.results.get(protocol.name)
        if loaded is None:
            continue
        if len(bundle.results) == 1:  # the first protocol found names the run
            bundle.name = str(getattr(loaded, "run_id"))  # noqa: B009
            bundle.title = run_title(model_name(loaded), str(getattr(loaded, "adapter", bundle.name)))
        if not sections:
            bundle.headlines[protocol.name] = protocol.headline(loaded)
    return bundle


def write_report(
    refs: Sequence[str],
    output: Path,
    results_dir: Path = Path("results"),
    pareto_delta_ms: float | None = None,
    budget_ms: float | None = None,
) -> Path:
    """Resolve each reference (a run directory or a run id under ``results_dir``), build the report and
    write it atomically to ``output`` (``budget_ms``: the comparison verdict's latency budget)."""
    bundles = [load_bundle(resolve_run(ref, results_dir)) for ref in refs]
    output.parent.mkdir(parents=True, exist_ok=True)
    from streambench.harness.io.atomic import atomic_write_text
    from streambench.harness.report import build_report

    atomic_write_text(output, build_report(bundles, pareto_delta_ms, budget_ms))
    output.chmod(0o644)  # a page to open and share (the atomic writer's temporary file is private)
    return output
