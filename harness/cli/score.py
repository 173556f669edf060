"""``streambench score ...``: metrics computed from files, without running a model."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from streambench.harness.cli.common import fail, out
from streambench.harness.io.safe_text import safe

if TYPE_CHECKING:
    from rich.table import Table

score_app = typer.Typer(help="Score saved outputs and files without running a model.", no_args_is_help=True)


def _table(title: str, rows: dict[str, Any]) -> Table:
    from rich.table import Table

    table = Table(title=safe(title), title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in rows.items():
        table.add_row(safe(name), f"{value:.6g}" if isinstance(value, float) else safe(value))
    return table


JsonOption = Annotated[bool, typer.Option("--json", help="print machine-readable JSON instead of a table")]


@score_app.command("online")
def score_online(
    run_dir: Annotated[Path, typer.Argument(help="a run directory under results/")],
    exclude_classes: Annotated[
        str | None,
        typer.Option(
            "--exclude-classes",
            help="classes left out of every metric, comma-separated (e.g. background); '' leaves none "
            "out; default: the run's own",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Re-score a saved online run from its recorded arrays and print the summary (``--json``: the
    re-scored metrics, in result.json's ``metrics`` shape). The failed test streams are scored as the
    run scored them, as answered wrongly, from the labels saved with them in ``arrays.npz``.
    ``--exclude-classes`` re-scores without those classes (F1 leaves the data's background out by
    default, whatever is excluded)."""
    from streambench.harness.results.files import (
        ResultFileError,
        load_failed_streams,
        load_recordings,
        load_result,
    )
    from streambench.harness.results.summary import print_summary
    from streambench.protocols import online

    where = run_dir if run_dir.is_dir() else run_dir.parent
    try:
        result = load_result(run_dir)
        recordings = load_recordings(where)
        failed = load_failed_streams(where)
    except ResultFileError as exc:
        raise fail(str(exc)) from None
    config = result.protocol_config
    if exclude_classes is not None:
        names = tuple(name.strip() for name in exclude_classes.split(",") if name.strip())
        config = config.model_copy(update={"exclude_classes": names})
    background = result.dataset_config.get("background_class")  # audio_files names its own
    try:
        rescored = online.score(recordings, config, result.adapter_info.classes, failed, background)
    except ValueError as exc:
        if exclude_classes is None:
            raise
        raise fail(f"--exclude-classes: {exc}") from None
    saved = {f.stream_id for f in failed}
    unsaved = [f.stream_id for f in result.failures if f.role == "test" and f.stream_id not in saved]
    if unsaved:  # a result written before failed streams were scored (scored.failure_rule "dropped")
        named = ", ".join(unsaved[:3]) + (", ..." if len(unsaved) > 3 else "")
        rescored.headline.warnings.append(
            f"{len(unsaved)} failed test stream(s) ({named}) have no labels in arrays.npz (written before "
            "failed streams were scored as answered wrongly): "
            "left out of these figures, as the run left them out"
        )
    if as_json:
        out.print_json(rescored.model_dump_json())
        return
    print_summary(out, result.model_copy(update={"metrics": rescored, "protocol_config": config}))


@score_app.command("detection")
def score_detection(
    file: Annotated[Path, typer.Argument(help="score file: '- - real|fake SCORE' a line (docs/metrics.md)")],
    threshold: Annotated[float | None, typer.Option(help="operating threshold (default: the EER's)")] = None,
    plot: Annotated[Path | None, typer.Option(help="draw DET and ROC curves to this .png/.svg")] = None,
    as_json: JsonOption = False,
) -> None:
    """EER (with its threshold), FAR, FRR, AUC, F1 and balanced accuracy of a score file."""
    from streambench.harness.io.lines import LineFileError
    from streambench.harness.io.score_file import read_score_file
    from streambench.harness.report.plots import plot_det_roc
    from streambench.protocols.metrics import det_curve_points, detection_metrics

    try:
        labels, scores = read_score_file(file)
        metrics = detection_metrics(labels, scores, threshold=threshold)
    except (LineFileError, ValueError) as exc:
        raise fail(str(exc)) from None
    if plot is not None:
        points = det_curve_points(labels, scores)
        plot_det_roc(points.far, points.frr, metrics.eer, plot, title=file.name)
    if as_json:
        out.print_json(json.dumps(asdict(metrics)))
    else:
        out.print(_table(f"Detection: {file.name}", asdict(metrics)))
        out.print("labels: 1 = real, 0 = fake; a sample is accepted when score >= threshold", highlight=False)


@score_app.command("calibration")
def score_calibration(
    file: Annotated[Path, typer.Argument(help="one 'CONFIDENCE CORRECT' (0/1) a line")],
    bins: Annotated[int, typer.Option(help="number of equal-width confidence bins")] = 10,
    edges: Annotated[
        str | None, typer.Option(help="explicit bin edges instead, comma-separated, e.g. 0,0.4,0.6,1")
    ] = None,
    plot: Annotated[Path | None, typer.Option(help="draw the reliability diagram to this .png/.svg")] = None,
    as_json: JsonOption = False,
) -> None:
    """ECE, MCE and the reliability bins of a calibration file (docs/metrics.md)."""
    from rich.table import Table

    from streambench.harness.io.calibration_file import read_calibration_file
    from streambench.harness.io.lines import LineFileError
    from streambench.harness.report.plots import plot_reliability
    from streambench.protocols.metrics import reliability_bins

    try:
        confidences, correct = read_calibration_file(file)
        bin_spec: int | list[float] = bins if edges is None else [float(e) for e in edges.split(",")]
        table = reliability_bins(confidences, correct, bins=bin_spec)
    except (LineFileError, ValueError) as exc:
        raise fail(str(exc)) from None
    if plot is not None:
        plot_reliability(
            table.edges, table.mean_confidence, table.accuracy, table.count, plot, title=file.name
        )
    per_bin = [  # an empty bin has no mean confidence or accuracy: None, not NaN
        {
            "lo": float(lo),
            "hi": float(hi),
            "count": int(n),
            "confidence": float(c) if n else None,
            "accuracy": float(a) if n else None,
        }
        for lo, hi, n, c, a in zip(
            table.edges[:-1], table.edges[1:], table.count, table.mean_confidence, table.accuracy, strict=True
        )
    ]
    if as_json:
        doc = {"n": table.n_samples, "ece": table.ece, "mce": table.mce, "bins": per_bin}
        out.print_json(json.dumps(doc))
        return
    out.print(
        _table(f"Calibration: {file.name}", {"samples": table.n_samples, "ECE": table.ece, "MCE": table.mce})
    )
    detail = Table(title="Reliability bins (lo, hi]", title_justify="left")
    for name in ("lo", "hi", "count", "confidence", "accuracy"):
        detail.add_column(name, justify="right")
    for row in per_bin:
        detail.add_row(
            *("–" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v) for v in row.values())
        )
    out.print(detail)


@score_app.command("ranking")
def score_ranking(
    run: Annotated[Path, typer.Option("--run", help="TREC run file (qid Q0 docid rank score tag)")],
    qrels: Annotated[Path, typer.Option("--qrels", help="TREC qrels file (qid iteration docid relevance)")],
    k: Annotated[str, typer.Option("--k", help="cut-offs, comma-separated")] = "1,5,10",
    gain: Annotated[str, typer.Option(help="NDCG gain: linear | exponential")] = "linear",
    as_json: JsonOption = False,
) -> None:
    """Hit, Precision, Recall, F1, MRR, MAP and NDCG at each k (trec_eval conventions; docs/metrics.md)."""
    from rich.table import Table

    from streambench.harness.io.lines import LineFileError
    from streambench.harness.io.trec import read_qrels, read_run
    from streambench.protocols.metrics import ranking_metrics

    try:
        cutoffs = [int(x) for x in k.split(",") if x.strip()]
    except ValueError:
        raise fail(f"--k {k!r}: expected comma-separated integers such as 1,5,10") from None
    if gain not in ("linear", "exponential"):
        raise fail(f"--gain {gain!r}: expected linear or exponential")
    try:
        run_table, qrels_table = read_run(run), read_qrels(qrels)
        figures = {c: ranking_metrics(run_table, qrels_table, c, gain=gain) for c in cutoffs}  # type: ignore[arg-type]
    except (LineFileError, ValueError) as exc:
        raise fail(str(exc)) from None
    if as_json:
        out.print_json(json.dumps({str(c): f for c, f in figures.items()}))
        return
    table = Table(
        title=f"Ranking: {safe(run.name)} against {safe(qrels.name)} (NDCG gain {safe(gain)})",
        title_justify="left",
    )
    table.add_column("k", justify="right")
    names = [name.split("@")[0] for name in next(iter(figures.values()))]
    for name in names:
        table.add_column(name, justify="right")
    for c, f in figures.items():
        table.add_row(str(c), *(f"{v:.4f}" for v in f.values()))
    out.print(table)
