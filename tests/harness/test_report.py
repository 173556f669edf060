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

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.instruments.manifest import Item
from streambench.harness.report import build_report
from streambench.harness.report.analysis import (
    detection_curves,
    pareto_front,
    reliability,
    score_pairs,
    thin_monotone,
)
from streambench.harness.report.compare import comparison_sections
from streambench.harness.report.numbers import latency_ms
from streambench.harness.runs.catalog import load_bundle, write_report
from streambench.harness.runs.causality.protocol import execute_causality
from streambench.harness.runs.robustness import execute_robustness
from streambench.harness.runs.session import execute_run
from streambench.protocols.causality import CausalityConfig
from streambench.protocols.metrics.bootstrap import Interval
from streambench.protocols.metrics.calibration import ece
from streambench.protocols.metrics.detection import roc_auc
from streambench.protocols.online_speed import StageRow
from streambench.protocols.recording import StreamRecording
from streambench.protocols.robustness import Failure, RobustnessConfig

HOSTILE = "<script>alert(1)</script>"
EXTERNAL = re.compile(
    r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//|@import""", re.I
)


def _config(root: Path, run_id: str, adapter: str = "reference") -> RunConfig:
    return RunConfig.model_validate(
        {
            "adapter": adapter,
            "data": {"num_streams": 3, "duration_s": 5.0, "seed": 0},
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
    # the pictures of these two are what is tested here, not their execution: in process (faster; the
    # default sealed worker: test_sealed_worker.py, test_host_timing.py, test_session_audit_run.py)
    execute_robustness(config.model_copy(update={"isolate": False}), sweep)
    execute_causality(config, CausalityConfig(cuts=(0.5,), occluders=("zeros",), sealed=False))
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
            assert f"{point.f1_micro * 100:.2f} %" in f1  # a share, as every view prints it
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
    assert bundle.result.fingerprint in env and '<th scope="row">cpu_model</th>' in env
    assert '<span class="null">— ' in env  # this machine has no GPU: those items are "—" with their reason
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


def test_comparison_opens_the_page_and_each_run_follows_collapsed(reports: dict[str, str]) -> None:
    """Issue 17: the comparison comes first; the runs' own reports follow, each in a closed <details>."""
    html = reports["two"]
    assert html.index('id="compare"') < html.index('id="run0"') < html.index('id="run1"')
    for run in ("run0", "run1"):
        assert f'<section id="{run}"><details class="group"><summary>' in html
    assert '<details class="group" open' not in html
    # one run: no comparison, its sections open
    assert 'id="compare' not in reports["one"] and 'class="group"' not in reports["one"]


def test_comparison_front_and_absent_sections(root: Path, reports: dict[str, str]) -> None:
    sections = _sections(reports["two"])
    ref, look = load_bundle(root / "ref").result, load_bundle(root / "look").result
    assert ref is not None and look is not None
    delta = 1000.0  # the largest Δt both runs scored
    assert "same as #1" in sections["compare-runs"]  # the runs scored the same data
    expected = pareto_front(
        [ref.metrics.overall.speed.latency.mean_ms, look.metrics.overall.speed.latency.mean_ms],
        [ref.metrics.f1_at(delta), look.metrics.f1_at(delta)],
    )
    pareto = sections["compare-pareto"]
    on = [name for name, front in zip(("#1 ref", "#2 look"), expected, strict=True) if front]
    assert f"On the front: {', '.join(on)}." in pareto and '<svg class="plot"' in pareto
    assert f"F1@{delta:g} ms" in pareto
    # no energy measured on this machine: the energy front says so, with the instrument's reason
    energy = sections["compare-energy"]
    assert "<svg" not in energy and "measured in 0 of 2 runs" in energy
    assert ref.resources.energy_per_frame_reason and ref.resources.energy_per_frame_reason[:30] in energy
    # the lookahead run has no robustness or causality file: one note says so, no box per section
    lacking = sections["run1-lacking"]
    assert "Robustness: need a robustness run" in lacking
    assert "Causality checks: need a causality run" in lacking
    assert "<code>streambench run --protocol robustness --run-id look</code>" in lacking
    assert "run1-robustness" not in sections and "run1-causality" not in sections
    # a chosen Δt that a run did not score is refused with the reason
    bundles = [load_bundle(root / "ref"), load_bundle(root / "look")]
    refused = {s.anchor: s.body for s in comparison_sections(bundles, 7.0)}
    assert "Δt = 7 ms: no Δt scored by every run" in refused["compare-pareto"]
    assert "<svg" not in refused["compare-pareto"] and "compare-energy" not in refused


def _row(html: str, name: str) -> list[str]:
    """The cells of the headline table's row whose first cell starts with ``name``, as text (tags and
    line breaks as single spaces)."""
    for row in re.findall(r"<tr>(.*?)</tr>", html, flags=re.DOTALL):
        cells = re.findall(r"<td(?: [^>]*)?>(.*?)</td>", row, flags=re.DOTALL)
        if cells and cells[0].startswith(name):
            return [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in cells]
    raise AssertionError(f"no row {name!r}")


def _f1_groups(a: list[Interval], b: list[Interval], deltas: list[float]) -> list[list[float]]:
    """Consecutive Δt at which both runs' F1 intervals are the same: the rows the table collapses."""
    groups: list[list[float]] = []
    for k, delta in enumerate(deltas):
        if groups and (a[k], b[k]) == (a[k - 1], b[k - 1]):
            groups[-1].append(delta)
        else:
            groups.append([delta])
    return groups


def _points(value: float) -> str:
    """A difference of F1 as the table writes it: percentage points, two decimals, always signed, U+2212
    for minus."""
    points = round(value * 100, 2)
    return "±0 pp" if points == 0 else f"{points:+.2f} pp".replace("-", "\u2212")


def _pct(value: float) -> str:
    return f"{value * 100:.2f} %"


def test_headline_figures_show_each_run_and_the_difference_with_its_interval(
    root: Path, reports: dict[str, str]
) -> None:
    """Issue 17: per figure, each run's value with its interval and the difference #2 − #1 with the MOVER
    interval of the stored intervals; p50 / p95 / p99 with intervals recomputed from the arrays."""
    from streambench.harness.report.deltas import mover_difference

    headline = _sections(reports["two"])["compare-headline"]
    ref, look = load_bundle(root / "ref").result, load_bundle(root / "look").result
    assert ref is not None and look is not None
    deltas = list(ref.protocol_config.deltas_ms)
    groups = _f1_groups(ref.metrics.headline.f1_strict, look.metrics.headline.f1_strict, deltas)
    assert len(groups) < len(deltas)  # the lookahead model is 0 until its delay, then constant: collapsed
    for group in groups:
        k = deltas.index(group[0])
        a, b = ref.metrics.headline.f1_strict[k], look.metrics.headline.f1_strict[k]
        span = f"{group[0]:g}" if len(group) == 1 else f"{group[0]:g}–{group[-1]:g}"
        cells = _row(headline, f"F1@{span} ms (Strict, frame)")
        if len(group) > 1:  # issue 27: one row, which says at which Δt it holds
            assert f"equal at Δt = {', '.join(f'{d:g}' for d in group)} ms" in cells[0]
        assert cells[1].startswith(f"{_pct(a.estimate)} [{_pct(a.low)}, {_pct(a.high)}]")
        assert cells[2].startswith(f"{_pct(b.estimate)} [{_pct(b.low)}, {_pct(b.high)}]")
        d = mover_difference(a, b)
        assert d.low is not None and d.high is not None
        assert d.low <= d.value <= d.high
        assert cells[3] == f"{_points(d.value)} [{_points(d.low)}, {_points(d.high)}]"
    assert headline.count("(Strict, frame)") == len(groups)  # not a row per Δt
    for name, attr in (("p50 latency", "p50_ms"), ("p95 latency", "p95_ms"), ("p99 latency", "p99_ms")):
        cells = _row(headline, name)
        for cell, result in zip(cells[1:3], (ref, look), strict=True):
            assert cell.startswith(latency_ms(getattr(result.metrics.overall.speed.latency, attr)))
            # the interval on its own line, in the value's unit
            assert re.fullmatch(r"[0-9.]+ (ns|µs|ms|s) \[[0-9.,]+, [0-9.,]+\] \1", cell), cell
        assert re.search(r"\[[−+±][0-9.,]+, [−+±][0-9.,]+\]", cells[3]), cells[3]
    assert "MOVER" in headline and "bootstrap over each run&#x27;s test streams" in headline
    # energy was measured in no run, for one reason: one cell says so once, no difference
    energy = _row(headline, "GPU energy per frame")
    assert len(energy) == 2 and energy[1].startswith("— in no run: ")
    assert ref.resources.energy_per_frame_reason and ref.resources.energy_per_frame_reason in energy[1]


def test_latency_distributions_are_overlaid_on_one_log_axis(reports: dict[str, str]) -> None:
    latency = _sections(reports["two"])["compare-latency"]
    assert latency.count('<svg class="plot"') == 1
    for name in ("#1 ref: p50", "#2 look: p50"):
        assert name in latency  # each run's curve, labelled with its p50 and p99
    assert "logarithmic" in latency


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
    pareto = next(section.body for section in compared if section.anchor == "compare-pareto")
    assert "#1 &lt;script&gt;" in pareto  # inside the Pareto SVG, as matplotlib text
    assert "<script" not in html.lower()
    assert "<img src=x" not in html and "<svg onload" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;/svg&gt;&lt;script&gt;alert(3)" in html
    assert "&lt;svg onload=alert(4)&gt;" in html
    # the stage name inside the SVG (matplotlib text) is escaped too, and its $ is not mathtext
    assert "&lt;b&gt;$x^2$ stage&lt;/b&gt;" in html
    # the failed robustness point is "—" with its reason, not a number
    assert "— failed" in _sections(html)["run0-robustness"]


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
    tree = _config(tmp_path, "fail", "tests.support:FailAtAdapter").model_dump()
    tree["adapter_options"] = {"stream": 2, "frame": 4, "fault": "shape"}
    tree["engine"]["warmup_frames"] = 0
    # no session audit: FailAtAdapter counts the streams it is fed, and audit copies would be counted too
    tree["protocol"]["audit"] = {"share": 0, "minimum": 0}
    execute_run(RunConfig.model_validate(tree))
    html = write_report(["fail"], tmp_path / "r.html", results_dir=tmp_path).read_text()
    summary = _sections(html)["run0-summary"]
    assert "adapter ran sealed; on error: continue; 1 session(s)" in summary  # the default (issue 24)
    # issue 24 item 5: the failed stream is in the figures, as answered wrongly, and the summary says so
    assert "2 of 3 planned streams by their outputs (250 frames); 1 failed, scored as answered" in summary
    assert "stream syn-0002 failed at frame 4 (scored as answered wrongly): adapter &#x27;fail-at" in summary


def test_latency_axes_go_logarithmic_when_a_few_slow_frames_would_squeeze_the_typical_range() -> None:
    """Issue 17: 0.03-0.2 ms typical frames and a few 4 ms ones: on a linear axis p50 and p95 share one
    bar; log-spaced bins separate them. A narrow spread keeps the linear axis."""
    from streambench.harness.report.figures import latency_bins

    rng = np.random.default_rng(0)
    typical = rng.uniform(0.03, 0.2, 2000)
    wide = np.concatenate([typical, [4.0, 4.2, 3.9]])
    bins, log_axis = latency_bins(wide)
    assert log_axis and isinstance(bins, np.ndarray)
    p50, p95 = np.percentile(wide, [50, 95])
    assert np.searchsorted(bins, p50) != np.searchsorted(bins, p95)  # in different bars
    narrow_bins, narrow_log = latency_bins(typical[typical < 0.1])
    assert not narrow_log and isinstance(narrow_bins, int)


def test_mover_interval_of_a_difference_from_two_stored_intervals() -> None:
    """Zou & Donner (2008): with symmetric intervals the difference's half-width is the root sum of the two
    half-widths; asymmetric ones combine the facing sides; different levels give no interval."""
    from streambench.harness.report.deltas import mover_difference
    from streambench.protocols.metrics.bootstrap import Interval

    a = Interval(0.50, 0.40, 0.60, 0.95, 10, 1000)
    b = Interval(0.70, 0.67, 0.73, 0.95, 10, 1000)
    d = mover_difference(a, b)
    half = (0.1**2 + 0.03**2) ** 0.5
    assert d.value == pytest.approx(0.2) and d.low == pytest.approx(0.2 - half)
    assert d.high == pytest.approx(0.2 + half) and d.excludes_zero and d.method and "MOVER" in d.method
    skewed = mover_difference(Interval(1.0, 0.9, 1.5, 0.95, 5, 100), Interval(2.0, 1.0, 2.1, 0.95, 5, 100))
    assert skewed.low == pytest.approx(1.0 - (1.0**2 + 0.5**2) ** 0.5)  # b's low side, a's high side
    assert skewed.high == pytest.approx(1.0 + (0.1**2 + 0.1**2) ** 0.5)
    assert not skewed.excludes_zero
    other_level = mover_difference(a, Interval(0.7, 0.6, 0.8, 0.9, 10, 1000))
    assert other_level.low is None and other_level.reason and "different levels" in other_level.reason


def test_percentile_intervals_resample_streams_and_see_a_shift() -> None:
    """p50 / p99 intervals over streams: a run whose every frame is 1 ms slower differs by exactly 1 ms in
    every resample (same seed, same draws); an identical run by 0, an interval that includes 0."""
    from streambench.harness.report.deltas import percentile_difference, percentile_intervals

    rng = np.random.default_rng(1)
    streams = [rng.lognormal(-3, 0.5, 200) for _ in range(8)]
    a = percentile_intervals(streams, (50, 99), resamples=300, confidence=0.9)
    pooled = np.concatenate(streams)
    assert a.streams == 8 and a.resampled.shape == (300, 2)
    assert a.low[0] <= np.percentile(pooled, 50) <= a.high[0] and a.low[1] < a.high[1]
    slower = percentile_intervals([s + 1.0 for s in streams], (50, 99), resamples=300, confidence=0.9)
    estimates = list(np.percentile(pooled, [50, 99]))
    shifted = percentile_difference(a, slower, estimates, [e + 1.0 for e in estimates])
    assert [d.value for d in shifted] == pytest.approx([1.0, 1.0])
    assert all(d.low == pytest.approx(1.0) and d.high == pytest.approx(1.0) for d in shifted)
    same = percentile_difference(a, a, estimates, estimates)
    assert all(d.value == 0 and not d.excludes_zero for d in same)


def test_log_ticks_cover_the_whole_range_and_stay_inside_it() -> None:
    """Issue 17: the Pareto plot's log axis showed ticks only below 0.1 ms. Ticks span the axis from end to
    end, at least two and at most eight, never outside (a tick outside would widen the axis)."""
    from streambench.harness.report.figures_compare import log_limits, log_ticks

    for low, high in [(0.03, 0.2), (7e-5, 4.2), (30.6, 38.5), (9.1, 19.9), (1e-9, 1e9), (0.0466, 0.0717)]:
        lo, hi = log_limits(low, high)
        ticks = log_ticks(lo, hi)
        assert 2 <= len(ticks) <= 8 and all(lo <= t <= hi for t in ticks), (low, high, ticks)
        # the ticks reach both halves of the axis (in log space), not one corner of it
        middle = (np.log10(lo) + np.log10(hi)) / 2
        assert min(np.log10(ticks)) < middle < max(np.log10(ticks)), (low, high, ticks)


def test_numbers_read_as_a_person_writes_them() -> None:
    from streambench.harness.report.numbers import human, latency_ms, rate_fps, signed

    assert rate_fps(18170.4) == "18,170 fps" and rate_fps(1.317e7) == "13,170,000 fps"
    assert human(0.0007762) == "0.0007762" and human(11136) == "11,136" and human(0.8131) == "0.8131"
    assert latency_ms(0.0466) == "46.6 µs" and latency_ms(4.25) == "4.25 ms" and latency_ms(7.6e-5) == "76 ns"
    assert latency_ms(1234.0) == "1.23 s" and latency_ms(0.99996) == "1 ms" and latency_ms(0.9994) == "999 µs"
    assert signed(-6070.0) == "\u22126,070" and signed(0.0) == "±0" and signed(0.00018) == "+0.00018"


def test_a_causality_only_run_says_once_which_sections_need_which_run(root: Path, tmp_path: Path) -> None:
    """Issue 17: eight identical "Not shown" boxes became one note naming the protocol each section needs;
    the causality run's own environment is shown; the caching audit's speed-up has its own label."""
    run_dir = tmp_path / "causal"
    run_dir.mkdir()
    shutil.copy(root / "ref" / "causality.json", run_dir / "causality.json")
    html = build_report([load_bundle(run_dir)])
    assert html.count('class="absent"') == 1
    note = _sections(html)["run0-lacking"]
    assert "Summary, Latency distribution" in note and "need a online run" in note
    assert "Robustness: need a robustness run" in note and "detection, stability, hysteresis" in note
    assert '<th scope="row">cpu_model</th>' in _sections(html)["run0-environment"]
    causality = _sections(html)["run0-causality"]
    rows = dict(re.findall(r"<tr><td>(\w+)</td>(.*?)</tr>", causality))
    assert "repeat speed-up" in rows["caching"] and "Δscore" not in rows["caching"]
    assert "max |Δscore|" in rows["determinism"] and "<th>measured</th>" in causality


def test_configuration_is_a_key_value_list_and_no_header_row_is_empty(reports: dict[str, str]) -> None:
    """Issue 17: the data set's configuration was raw JSON; key/value tables had an empty header row."""
    summary = _sections(reports["one"])["run0-summary"]
    assert "<dt>num_streams</dt><dd>3</dd>" in summary and '"num_streams":' not in summary
    for html in reports.values():
        assert "<th></th><th></th>" not in html
        assert not re.search(r"<thead><tr>(<th></th>)+</tr></thead>", html)
