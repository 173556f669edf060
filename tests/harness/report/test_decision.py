"""The comparison report built for a decision (issue 27 items 2, 3, 8; harness/report/decision.py): the
verdict for a latency budget, the measurement-quality verdict beside every timing (INVALID greyed,
never bold, never eligible), equal F1@Δt rows collapsed, ``report --budget-ms`` and its bad input, the
sentence on segment against frame F1."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from markupsafe import escape
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.report.compare import comparison_sections
from streambench.harness.report.compare_table import headline_rows, headline_tables
from streambench.harness.report.decision import (
    Candidate,
    choose,
    decision_delta,
    decision_section,
    default_budget,
)
from streambench.harness.report.sections_run import (
    SEGMENT_VS_FRAME,
    f1_section,
    latency_section,
    summary_section,
)
from streambench.harness.results.files import RESULT_FILE, RunResult
from streambench.harness.runs.catalog import load_bundle
from streambench.harness.runs.session import execute_run
from streambench.protocols.metrics.bootstrap import Interval

BUSY = (
    "2298 involuntary context switches in 375 frames: up to 613% of frames include another process's time "
    "(limit 50%)"
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Small in-process runs of one data draw (the pictures are tested here, not the worker): the reference
    model, its lookahead twin, a copy of the first (``twin``), and a model 20x slower whose measurement is
    INVALID (the issue's Silero run: a busy machine), so its timings would differ at any level."""
    root = tmp_path_factory.mktemp("verdict")
    runs = (
        ("ref", "reference", {}),
        ("look", "reference-lookahead", {}),
        ("busy", "busywait", {"duration_us": 2000}),
    )
    for run_id, adapter, options in runs:
        config = {
            "adapter": adapter,
            "adapter_options": options,
            "data": {"num_streams": 3, "duration_s": 4.0, "seed": 0},
            "engine": {"warmup_frames": 5},
            "protocol": {"bootstrap_resamples": 50},
            "isolate": False,
            "output_dir": root,
            "run_id": run_id,
        }
        execute_run(RunConfig.model_validate(config))
    raw = json.loads((root / "busy" / RESULT_FILE).read_text())
    raw["measurement_quality"].update(verdict="INVALID", reasons=[BUSY])
    (root / "busy" / RESULT_FILE).write_text(json.dumps(raw))
    shutil.copytree(root / "ref", root / "twin")
    return root


def _interval(estimate: float, half: float = 0.02) -> Interval:
    return Interval(estimate, estimate - half, estimate + half, 0.95, 10, 100)


def test_the_most_accurate_eligible_run_within_the_budget_is_chosen() -> None:
    """Eligible: p95 within the budget and not INVALID; then the highest F1, ties to the lower p95; the
    runner-up follows; none fits when every valid p95 is over."""
    fast = Candidate("#1 fast", _interval(0.80), 0.79, p95_ms=5.0)
    good = Candidate("#2 good", _interval(0.90), 0.85, p95_ms=60.0)
    slow = Candidate("#3 slow", _interval(0.95), 0.70, p95_ms=150.0)
    busy = Candidate("#4 busy", _interval(0.99), 0.99, p95_ms=1.0, invalid="measurement INVALID: busy")
    at_100 = choose([fast, good, slow, busy], 100.0)
    assert at_100.chosen is good and at_100.runner_up is fast
    assert at_100.over_budget == [slow] and at_100.invalid == [busy]  # the most accurate of all is INVALID
    assert choose([fast, good, slow, busy], 200.0).chosen is slow
    assert choose([fast, good, slow], 50.0).chosen is fast
    nothing = choose([good, slow, busy], 1.0)
    assert nothing.chosen is None and nothing.over_budget == [good, slow]
    twin = Candidate("#5 twin", _interval(0.90), None, p95_ms=30.0)  # as accurate as #2, and faster
    assert choose([good, twin], 100.0).chosen is twin
    assert choose([good, Candidate("#6", _interval(0.90), None, 60.0)], 100.0).chosen is good  # order


def test_the_default_budget_is_the_largest_delta_every_run_scored() -> None:
    def result(*deltas: float) -> RunResult:
        return cast(RunResult, SimpleNamespace(protocol_config=SimpleNamespace(deltas_ms=list(deltas))))

    runs = [result(0, 50, 100, 200, 512), result(0, 100, 200, 1000)]
    assert default_budget(runs) == 200
    assert decision_delta(runs, 150.0) == 100  # the largest shared Δt below the budget
    assert decision_delta(runs, 200.0) == 200 and decision_delta([result(50)], 10.0) is None
    assert default_budget([result(50), result(100)]) is None


@pytest.mark.processes
def test_the_verdict_block_names_the_choice_and_says_why_a_run_is_left_out(root: Path) -> None:
    ref, look, busy = (load_bundle(root / name).result for name in ("ref", "look", "busy"))
    assert ref is not None and look is not None and busy is not None
    pairs = [("#1 ref", ref), ("#2 look", look), ("#3 busy", busy)]
    # the lookahead model answers late: nothing within 100 ms, better than #1 from 200 ms on
    assert look.metrics.f1_at(100) < ref.metrics.f1_at(100) and look.metrics.f1_at(200) > ref.metrics.f1_at(
        200
    )
    at_100 = decision_section(pairs, 100.0)
    p95 = ref.metrics.overall.speed.latency.p95_ms
    f1 = ref.metrics.headline.f1_strict[ref.protocol_config.deltas_ms.index(100)]
    assert (
        "For a latency budget of 100 ms (p95 latency of predict() at most 100 ms), the most accurate run "
        f"that fits is #1 ref: F1@100 ms {f1.estimate * 100:.2f} %"
    ) in at_100
    assert "Runner-up #2 look" in at_100
    assert (
        "#3 busy: not eligible, measurement INVALID: 2298 involuntary context switches in 375 frames"
        in at_100
    )
    assert "The budget of 100 ms was given (--budget-ms)." in at_100
    # default: the largest Δt every run scored; the choice at each Δt is listed
    default = decision_section(pairs, None)
    assert (
        "For a latency budget of 1000 ms" in default
        and "the most accurate run that fits is #2 look" in default
    )
    assert "The budget is the largest Δt every run scored (1000 ms)" in default
    choices = re.findall(r"<tr><td>(?:<strong>)?(\d+) ms(?:</strong>)?</td><td>(?:<strong>)?([^<]+)", default)
    assert dict(choices)["100"] == "#1 ref" and dict(choices)["1000"] == "#2 look"
    # a budget no run meets
    assert "no run fits: the fastest valid run" in decision_section(pairs, p95 / 1e6)


@pytest.mark.processes
def test_a_comparison_with_an_invalid_run_greys_its_timings_and_never_bolds_them(root: Path) -> None:
    """Issue 27 item 2: the INVALID run's latency differences are greyed with the reason, not bold."""
    bundles = [load_bundle(root / name) for name in ("ref", "busy", "look")]
    rows = {row.name: row for row in headline_rows(bundles, 1000.0)}
    for name in ("mean latency", "p50 latency", "p95 latency", "FPS (1 / mean latency)"):
        row = rows[name]
        assert row.timing and row.values[1].invalid == "measurement INVALID" and row.values[2].invalid is None
        difference = row.deltas[0]
        assert difference.invalid == "#2 measurement INVALID" and not difference.excludes_zero
        assert difference.low is not None and difference.high is not None
        assert difference.low * difference.high > 0  # 20x slower: the interval is far from 0, yet not bold
        assert row.deltas[1].invalid is None  # #3 − #1: both valid
    f1 = next(row for name, row in rows.items() if name.startswith("F1@") and "compute" not in name)
    assert not f1.timing and all(v.invalid is None for v in f1.values)  # accuracy is not a timing
    html = headline_tables(list(rows.values()), ["#1 ref", "#2 busy", "#3 look"])
    greyed = re.findall(r'<span class="nw invalid">([^<]+)</span>', html)
    assert len(greyed) == 2 * sum(row.timing for row in rows.values())  # value and difference of each
    sections = {section.anchor: section.body for section in comparison_sections(bundles[:2], None)}
    page = "".join(sections.values())
    # the comparison names a run by its model first (issue 37): #2 is the busy run's busywait adapter
    assert escape(f"#2 {bundles[1].title}: {BUSY}") in page and "Greyed, never bold" in page
    assert page.count('<span class="fail">INVALID</span>') == 2  # in the verdict's table and the runs'
    headline = sections["compare-headline"].split("</table>")[0]
    timing = headline[headline.index("F1@1000 ms compute-aware") :]  # 7 rows: compute-aware F1 ... RTF
    assert "differs" not in timing and timing.count("#2 measurement INVALID") == 7
    assert (
        "(INVALID)" in sections["compare-pareto"]
        and "Not judged (measurement INVALID" in sections["compare-pareto"]
    )


def test_equal_f1_rows_are_one_row(root: Path) -> None:
    bundles = [load_bundle(root / "ref"), load_bundle(root / "twin")]  # one run twice: equal at every Δt
    names = [row.name for row in headline_rows(bundles, None) if row.name.startswith("F1@")]
    ref = bundles[0].result
    assert ref is not None
    first, last = ref.protocol_config.deltas_ms[0], ref.protocol_config.deltas_ms[-1]
    constant = len({i.estimate for i in ref.metrics.headline.f1_strict}) == 1
    assert constant and names == [f"F1@{first:g}–{last:g} ms (Strict, frame)"]


def test_the_single_run_report_shows_the_verdict_and_why_segment_and_frame_f1_differ(root: Path) -> None:
    """The verdict above the run's speed table and above its latency pictures when INVALID; the sentence
    on segment against frame F1 under the table that shows both."""
    busy, ref = load_bundle(root / "busy"), load_bundle(root / "ref")
    banner = '<span class="fail">Measurement INVALID</span>: ' + str(escape(BUSY))
    assert banner in summary_section(busy) and latency_section(busy).startswith(
        f'<p class="verdict-invalid">{banner}'
    )
    assert 'Measurement <span class="pass">VALID</span>' in summary_section(ref)
    assert "Measurement INVALID" not in latency_section(ref)
    f1 = f1_section(ref)
    assert "segment, algorithmic clock" in f1 and "frame, algorithmic clock" in f1  # side by side
    assert escape(SEGMENT_VS_FRAME) in f1


def test_report_budget_option_refuses_bad_input_in_one_line(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "c.html"
    for args, message in (
        (
            ["ref", "look", "--budget-ms", "-5"],
            "--budget-ms must be a positive number of milliseconds, got -5",
        ),
        (
            ["ref", "look", "--budget-ms", "inf"],
            "--budget-ms must be a positive number of milliseconds, got inf",
        ),
        (["ref", "--budget-ms", "100"], "--budget-ms chooses between runs: give two or more"),
    ):
        bad = CliRunner().invoke(app, ["report", *args, "--results-dir", str(root), "-o", str(out)])
        assert bad.exit_code == 2 and bad.output.strip() == f"error: {message}", bad.output
    assert not out.exists()


@pytest.mark.slow
def test_report_budget_option_sets_the_verdicts_budget(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "c.html"
    args = ["report", "ref", "look", "--results-dir", str(root), "-o", str(out), "--budget-ms", "200"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    page = out.read_text()
    # the run named by its model (issue 37): the lookahead run's adapter
    best = "the most accurate run that fits is #2 reference-lookahead"
    assert "For a latency budget of 200 ms" in page and best in page
    assert page.index('id="compare-verdict"') < page.index('id="compare-runs"')  # the verdict comes first
