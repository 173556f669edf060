"""The HTML report (harness/report/, ``streambench report``): every section from real small runs,
values equal to the run's own, absent sections with their reason, escaping, no external resource,
the CLI."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from markupsafe import escape
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.instruments.host_items import Item
from streambench.harness.report import build_report
from streambench.harness.report.analysis import (
    pareto_front,
)
from streambench.harness.report.compare import comparison_sections
from streambench.harness.report.numbers import latency_ms
from streambench.harness.runs.catalog import load_bundle, write_report
from streambench.harness.runs.causality.protocol import execute_causality
from streambench.harness.runs.robustness import execute_robustness
from streambench.harness.runs.session import execute_run
from streambench.protocols.causality import CausalityConfig
from streambench.protocols.metrics.bootstrap import Interval
from streambench.protocols.online_speed import StageRow
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
    # default sealed worker: tests/harness/execution/test_sealed_worker.py, test_host_timing.py,
    # tests/harness/runs/test_session_audit.py)
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


@pytest.mark.processes
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
    # the figures that look broken alone say why (issue 37): compute-aware F1@0 ms, the segment unit, and
    # the reference model's event F1 far below its frame F1 (its onsets ramp up over 0.4 s, past the collar)
    assert '<p class="why">Why: F1 compute-aware at 0 ms is 0 by construction' in f1
    assert "Why: segment F1: 1 s segments of 25 frames of 40 ms (data.segment_length_s = 1 s" in f1
    why_gap = r'<p class="why">Why: frame F1 [\d.]+ % \(Strict, 1000 ms\) vs event F1 [\d.]+ %.*?</p>'
    gap = re.search(why_gap, html)
    assert gap is not None and "events were flagged, a median" in gap.group(0)
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


@pytest.mark.processes
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
    titles = (f"#1 {load_bundle(root / 'ref').title}", f"#2 {load_bundle(root / 'look').title}")
    assert titles == ("#1 reference-causal (reference)", "#2 reference-lookahead")  # the model's name first
    on = [name for name, front in zip(titles, expected, strict=True) if front]
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
    assert "MOVER" in headline and escape("bootstrap over each run's test streams") in headline
    # energy was measured in no run, for one reason: one cell says so once, no difference
    energy = _row(headline, "GPU energy per frame")
    assert len(energy) == 2 and energy[1].startswith("— in no run: ")
    assert ref.resources.energy_per_frame_reason and ref.resources.energy_per_frame_reason in energy[1]


def test_latency_distributions_are_overlaid_on_one_log_axis(reports: dict[str, str]) -> None:
    latency = _sections(reports["two"])["compare-latency"]
    assert latency.count('<svg class="plot"') == 1
    for name in ("#1 reference-causal (reference): p50", "#2 reference-lookahead: p50"):
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
    bundle.name = bundle.title = HOSTILE
    # the run's own sections, and the comparison (its Pareto labels carry the adapter name)
    compared = comparison_sections([bundle, load_bundle(root / "look")], None)
    html = str(build_report([bundle])) + "".join(section.body for section in compared)  # both HTML
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


def test_cli_writes_the_report(root: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["report", "look", "--results-dir", str(root)])
    assert done.exit_code == 0, done.output
    written = root / "look" / "report.html"  # default: beside the run's files
    # named by its model first, its id second (issue 37)
    assert written.is_file() and "streambench report: reference-lookahead · look" in written.read_text()
    out = tmp_path / "r.html"
    bad = runner.invoke(app, ["report", "missing-run", "--results-dir", str(root), "-o", str(out)])
    assert bad.exit_code == 2 and "missing-run" in bad.output


@pytest.mark.processes
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
    assert (
        escape("stream syn-0002 failed at frame 4 (scored as answered wrongly): adapter 'fail-at") in summary
    )


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
