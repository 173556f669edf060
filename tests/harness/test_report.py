"""The HTML report (harness/report/, ``streambench report``): every section from real small runs, values
equal to the run's own, absent sections with their reason, escaping, no external resource, the CLI."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.execution.config import RunConfig
from harness.instruments.manifest import Item
from harness.report import build_report
from harness.report.analysis import detection_curves, pareto_front, reliability, score_pairs, thin_monotone
from harness.report.compare import comparison_sections
from harness.runs.catalog import load_bundle, write_report
from harness.runs.causality import execute_causality
from harness.runs.robustness import execute_robustness
from harness.runs.session import execute_run
from protocols.causality import CausalityConfig
from protocols.metrics.calibration import ece
from protocols.metrics.detection import roc_auc
from protocols.online_speed import StageRow
from protocols.recording import StreamRecording
from protocols.robustness import Failure, RobustnessConfig

HOSTILE = "<script>alert(1)</script>"
EXTERNAL = re.compile(
    r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//|@import""", re.I
)


def _config(root: Path, run_id: str, adapter: str = "reference") -> RunConfig:
    return RunConfig.model_validate(
        {
            "adapter": adapter,
            "data": {"num_streams": 3, "duration_s": 5.0},
            "engine": {"warmup_frames": 10},
            "protocol": {"bootstrap_resamples": 50},
            "output_dir": root,
            "run_id": run_id,
        }
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two online runs under one results directory; the first also has robustness and causality files."""
    root = tmp_path_factory.mktemp("results")
    config = _config(root, "ref")
    execute_run(config)
    sweep = RobustnessConfig(
        online=config.protocol, missing_rates_pct=(50,), audio_delays_ms=(0, 200), jitters_ms=(0, 20)
    )
    execute_robustness(config, sweep)
    execute_causality(config, CausalityConfig(cuts=(0.5,), occluders=("zeros",)))
    execute_run(_config(root, "look", "reference-lookahead"))
    return root


@pytest.fixture(scope="module")
def reports(root: Path) -> dict[str, str]:
    """The report of the first run alone (by run id) and of both runs (by directory)."""
    one = write_report(["ref"], root / "one.html", results_dir=root).read_text()
    two = write_report([str(root / "ref"), str(root / "look")], root / "two.html").read_text()
    return {"one": one, "two": two}


def _sections(html: str) -> dict[str, str]:
    """Body of each ``<section id="runN-key">`` (inner sections are not nested in one another)."""
    found = re.findall(r'<section id="([^"]+)"><h3>.*?</h3>(.*?)</section>', html, flags=re.DOTALL)
    return dict(found)


def test_single_run_has_every_picture_with_the_runs_own_numbers(root: Path, reports: dict[str, str]) -> None:
    html = reports["one"]
    bundle = load_bundle(root / "ref")
    assert bundle.result is not None and {"robustness", "causality"} <= set(bundle.results)
    sections = _sections(html)
    with_svg = {key for key, body in sections.items() if '<svg class="plot"' in body}
    expected = {"latency", "timeline", "f1", "breakdown", "reliability", "detection", "robustness"}
    assert with_svg == {f"run0-{k}" for k in expected}
    # the percentiles marked are the result's, to the digits shown
    lat = bundle.result.metrics.overall.speed.latency
    for name, value in (("p50", lat.p50_ms), ("p95", lat.p95_ms), ("p99", lat.p99_ms)):
        assert f"{name} {value:.4g} ms" in sections["run0-latency"]
    assert f"n = {lat.n} frames" in sections["run0-latency"]
    # F1@Δt table: the algorithmic and the compute-aware curves, each value the result's
    f1 = sections["run0-f1"]
    for unit in ("frame", "frame_replay", "segment"):
        for point in bundle.result.metrics.overall.accuracy.curves[unit]["strict"]:
            assert f"{point.f1_micro:.4f}" in f1
    assert "compute-aware (replayed latencies)" in f1
    # breakdown rows, robustness points, causality verdict, manifest items
    for row in bundle.result.metrics.overall.speed.breakdown:
        assert f"<td>{row.ms_per_frame:.4g}</td>" in sections["run0-breakdown"]
    assert sections["run0-robustness"].count("<tr>") == 1 + 1 + 5  # header, clean, five sweep points
    causality = sections["run0-causality"]
    verdict = '<span class="pass">passed</span>' if bundle.results["causality"].report.passed else "FAILED"
    assert verdict in causality
    for check in bundle.results["causality"].report.checks:
        assert f"<td>{check.name}</td>" in causality
    env = sections["run0-environment"]
    assert bundle.result.fingerprint in env and "<code>cpu_model</code>" in env
    assert "null: " in env  # this machine has no GPU: those items are null with their reason
    # one run: no comparison group
    assert 'id="compare' not in html


def test_report_is_self_contained(reports: dict[str, str]) -> None:
    html = reports["two"]
    assert not EXTERNAL.search(html)
    assert "<script" not in html.lower() and "<link" not in html.lower() and "<iframe" not in html.lower()
    assert "<?xml" not in html and "<!DOCTYPE svg" not in html and "<metadata>" not in html
    # ids are unique on the page although every SVG starts numbering its own
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids)) > 100
    # the detector catches what it should
    assert EXTERNAL.search('<img src="https://example.org/x.png">')
    assert EXTERNAL.search("<a href='//cdn.example.org/x.js'>")


def test_comparison_front_and_absent_sections(root: Path, reports: dict[str, str]) -> None:
    sections = _sections(reports["two"])
    ref, look = load_bundle(root / "ref").result, load_bundle(root / "look").result
    assert ref is not None and look is not None
    delta = 1000.0  # the largest Δt both runs scored
    table = sections["compare-table"]
    assert f"F1@{delta:g} ms" in table
    expected = pareto_front(
        [ref.metrics.overall.speed.latency.mean_ms, look.metrics.overall.speed.latency.mean_ms],
        [ref.metrics.f1_at(delta), look.metrics.f1_at(delta)],
    )
    flags = re.findall(r"<td>(yes|no)</td></tr>", table)
    assert flags == ["yes" if f else "no" for f in expected]
    assert '<svg class="plot"' in sections["compare-pareto"]
    # no energy measured on this machine: the energy front says so, with the instrument's reason
    energy = sections["compare-energy"]
    assert "<svg" not in energy and "measured in 0 of 2 runs" in energy
    assert ref.resources.energy_per_frame_reason and ref.resources.energy_per_frame_reason[:30] in energy
    # the lookahead run has no robustness or causality file: said, not drawn
    assert "Not shown: no robustness.json" in sections["run1-robustness"]
    assert "Not shown: no causality.json" in sections["run1-causality"]
    # a chosen Δt that a run did not score is refused with the reason
    bundles = [load_bundle(root / "ref"), load_bundle(root / "look")]
    (refused,) = comparison_sections(bundles, 7.0)
    assert "Δt = 7 ms: no Δt scored by every run" in refused.body and "<svg" not in refused.body


def test_every_shown_string_is_escaped(root: Path) -> None:
    bundle = load_bundle(root / "ref")
    assert bundle.result is not None and bundle.recordings is not None and "robustness" in bundle.results
    result = bundle.result
    result.adapter = HOSTILE
    result.adapter_options = {"x": '<img src=x onerror="alert(2)">'}
    result.run_id = "</svg><script>alert(3)</script>"
    result.environment = result.environment.model_copy(update={"cpu_model": Item(value=HOSTILE)})
    result.metrics.overall.speed.breakdown = [
        StageRow(stage="<b>$x^2$ stage</b>", ms_per_frame=1.0, share=1.0),
    ]
    bundle.recordings = [replace(r, stream_id=HOSTILE) for r in bundle.recordings]
    point = bundle.results["robustness"].report.points[0]
    point.failure, point.f1, point.abs_drop, point.rel_drop = (
        Failure(stream_id=HOSTILE, frame=3, error="<svg onload=alert(4)>"),
        None,
        None,
        None,
    )
    bundle.name = HOSTILE
    # the run's own sections, and the comparison (its Pareto labels carry the adapter name)
    compared = comparison_sections([bundle, load_bundle(root / "look")], None)
    html = build_report([bundle]) + "".join(section.body for section in compared)
    assert "#1 &lt;script&gt;" in compared[1].body  # inside the Pareto SVG, as matplotlib text
    assert "<script" not in html.lower()
    assert "<img src=x" not in html and "<svg onload" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;/svg&gt;&lt;script&gt;alert(3)" in html
    assert "&lt;svg onload=alert(4)&gt;" in html
    # the stage name inside the SVG (matplotlib text) is escaped too, and its $ is not mathtext
    assert "&lt;b&gt;$x^2$ stage&lt;/b&gt;" in html
    # the failed robustness point is null with its reason, not a number
    assert "null: failed" in _sections(html)["run0-robustness"]


def test_missing_arrays_hide_only_what_needs_them(root: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "copy"
    shutil.copytree(root / "look", run_dir)
    (run_dir / "arrays.npz").unlink()
    html = build_report([load_bundle(run_dir)])
    sections = _sections(html)
    for key in ("latency", "timeline", "reliability", "detection"):
        assert "Not shown:" in sections[f"run0-{key}"] and "arrays.npz" in sections[f"run0-{key}"]
    assert '<svg class="plot"' in sections["run0-f1"]


def _recording(scores: np.ndarray, labels: np.ndarray) -> StreamRecording:
    n = labels.shape[0]
    return StreamRecording(
        stream_id="s",
        role="test",
        t0_ns=0,
        segment_length_ns=None,
        frame_times_ns=np.arange(1, n + 1, dtype=np.int64) * 40_000_000,
        labels=labels,
        latency_ns=np.full(n, 1000, dtype=np.int64),
        emitted_at=np.arange(n, dtype=np.int64),
        refers_to=np.arange(n, dtype=np.int64),
        scores=scores,
    )


def test_reliability_and_det_are_the_metric_modules_on_one_vs_rest_pairs() -> None:
    rng = np.random.default_rng(3)
    labels = rng.random((40, 3)) < 0.3
    scores = np.clip(labels * 0.6 + rng.random((40, 3)) * 0.5, 0, 1).astype(np.float32)
    rec = _recording(scores, labels)
    pairs = score_pairs([rec], ("a", "b", "c"), ("a", "c"))  # "b" excluded from the metrics
    assert pairs.predictions == 40 and pairs.classes == 2 and pairs.scores.size == 80
    flat_scores = scores[:, [0, 2]].astype(np.float64).ravel()
    flat_labels = labels[:, [0, 2]].ravel()
    np.testing.assert_array_equal(pairs.scores, flat_scores)
    bins = reliability(pairs).bins
    assert bins is not None and bins.ece == pytest.approx(ece(flat_scores, flat_labels))
    curves = detection_curves(pairs)
    assert curves.auc == pytest.approx(roc_auc(flat_labels, flat_scores))
    # logits are not probabilities: no reliability diagram, and the reason names the range
    logits = _recording(scores * 4 - 2, labels)
    result = reliability(score_pairs([logits], ("a", "b", "c"), ("a", "b", "c")))
    assert result.bins is None and result.reason and "not probabilities" in result.reason
    # one label value only: no DET
    none = _recording(scores, np.zeros_like(labels))
    assert detection_curves(score_pairs([none], ("a", "b", "c"), ("a",))).reason


def test_pareto_front_and_thinning() -> None:
    front = pareto_front([1.0, 2.0, 3.0, 2.0, 0.5], [0.5, 0.7, 0.6, 0.7, 0.1])
    assert front.tolist() == [True, True, False, True, True]
    x = np.linspace(0, 1, 100_001)
    keep = thin_monotone(x, x**2, resolution=0.01)
    assert keep[0] == 0 and keep[-1] == x.size - 1 and 50 < keep.size < 200


def test_cli_writes_the_report(root: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["report", "look", "--results-dir", str(root)])
    assert done.exit_code == 0, done.output
    written = root / "look" / "report.html"  # default: beside the run's files
    assert written.is_file() and "streambench report: look" in written.read_text()
    out = tmp_path / "r.html"
    bad = runner.invoke(app, ["report", "missing-run", "--results-dir", str(root), "-o", str(out)])
    assert bad.exit_code == 2 and "missing-run" in bad.output


def test_failures_and_execution_mode_are_shown_escaped(tmp_path: Path) -> None:
    """A run with an adapter failure: the summary says how the adapter ran, how much was scored, and
    names the failed stream and frame, with the adapter's message escaped."""
    config = _config(tmp_path, "fail", "tests.support:FailAtAdapter").model_copy(
        update={"adapter_options": {"stream": 2, "frame": 4, "fault": "shape"}}
    )
    config = config.model_copy(update={"engine": config.engine.model_copy(update={"warmup_frames": 0})})
    execute_run(config)
    html = write_report(["fail"], tmp_path / "r.html", results_dir=tmp_path).read_text()
    summary = _sections(html)["run0-summary"]
    assert "adapter ran in-process; on error: continue; 1 session(s)" in summary
    assert "2 of 3 planned streams (250 frames); 1 failed" in summary
    assert "stream syn-0002 failed at frame 4: adapter &#x27;fail-at&#x27;" in summary


def test_latency_axes_go_logarithmic_when_a_few_slow_frames_would_squeeze_the_typical_range() -> None:
    """Issue 17: 0.03-0.2 ms typical frames and a few 4 ms ones: on a linear axis p50 and p95 share one
    bar; log-spaced bins separate them. A narrow spread keeps the linear axis."""
    from harness.report.figures import latency_bins

    rng = np.random.default_rng(0)
    typical = rng.uniform(0.03, 0.2, 2000)
    wide = np.concatenate([typical, [4.0, 4.2, 3.9]])
    bins, log_axis = latency_bins(wide)
    assert log_axis and isinstance(bins, np.ndarray)
    p50, p95 = np.percentile(wide, [50, 95])
    assert np.searchsorted(bins, p50) != np.searchsorted(bins, p95)  # in different bars
    narrow_bins, narrow_log = latency_bins(typical[typical < 0.1])
    assert not narrow_log and isinstance(narrow_bins, int)
