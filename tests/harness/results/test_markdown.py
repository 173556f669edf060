"""Markdown summaries (harness/results/markdown.py, ``show --markdown``, ``compare --markdown``): the figures
are there, as measured, with their intervals; nulls carry their reason; strings from results are escaped."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.results.compare import FailOnSpec, compare_runs
from streambench.harness.results.files import RunResult, load_result
from streambench.harness.results.headline import Figure, RunHeadline
from streambench.harness.results.markdown import compare_markdown, escape_md, format_value, run_markdown
from streambench.harness.runs.catalog import load_headline
from streambench.harness.runs.session import execute_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunResult, Path]:
    config = RunConfig.model_validate(
        {
            "data": {"num_streams": 3, "duration_s": 5.0},
            "engine": {"warmup_frames": 10},
            "output_dir": tmp_path_factory.mktemp("markdown"),
            "run_id": "md-run",
        }
    )
    result, _, run_dir = execute_run(config)
    return result, run_dir


@pytest.mark.processes
def test_run_markdown_holds_the_measured_figures(run: tuple[RunResult, Path]) -> None:
    result, run_dir = run
    text = run_markdown(load_headline(run_dir))
    lines = text.splitlines()
    assert lines[0] == "### streambench run md-run"
    assert f"environment fingerprint {result.fingerprint}" in lines[2]
    head, lat = result.metrics.headline, result.metrics.overall.speed.latency
    f1 = head.f1_strict[2]
    row = (  # a share, shown as a percentage in every view (issue 17)
        f"| F1@100ms | {f1.estimate * 100:.2f} % | 95 % [{f1.low * 100:.2f} %, {f1.high * 100:.2f} %] "
        "| 3 streams, 375 frames |"
    )
    assert row in lines
    assert f"| latency p95 (ms) | {lat.p95_ms:.3f} |  | 375 frames |" in lines
    mean = head.mean_latency_ms
    assert f"| latency mean (ms) | {mean.estimate:.3f} | 95 % [{mean.low:.3f}, {mean.high:.3f}] |" in text
    assert (
        lat.fps is not None
        and f"| FPS | {lat.fps:.0f} | 95 % [{1e3 / mean.high:.0f}, {1e3 / mean.low:.0f}] |" in text
    )
    assert f"| RTF | {head.rtf.estimate:.4g} |" in text
    frame_acc = result.metrics.overall.accuracy.frame_accuracy
    assert f"| frame accuracy | {frame_acc * 100:.2f} % |  | 375 frames |" in lines
    reason = result.resources.energy_per_frame_reason
    assert reason and f"| energy per frame (J) | null: {escape_md(reason)} |  |  |" in lines
    assert "> **warning:** only 3 test streams: the intervals over streams are rough" in text
    # the same text from the command line
    cli = CliRunner().invoke(app, ["show", str(run_dir), "--markdown"])
    assert cli.exit_code == 0 and cli.output == text


@pytest.mark.processes
def test_compare_markdown_shows_both_sides_and_the_verdict(run: tuple[RunResult, Path]) -> None:
    _, run_dir = run
    base = load_headline(run_dir)
    lat = load_result(run_dir).metrics.overall.speed.latency
    slower = [f.model_copy(update={"value": f.value * 2}) if f.key == "p50" else f for f in base.figures]
    head = base.model_copy(update={"run": "slower", "figures": slower})
    samples = np.arange(1000, 2000, dtype=np.int64)
    comparison = compare_runs(base, head, FailOnSpec.parse("p50:+50%"), samples, samples * 2)
    text = compare_markdown(comparison)
    lines = text.splitlines()
    # each run named by its model first, its id second (issue 37)
    named = "reference-causal (reference)"
    assert lines[0] == f"### streambench compare {named} (md-run) → {named} (slower)"
    assert lines[2] == "**1 regression(s):** p50"
    p50 = f"| latency p50 (ms) | {lat.p50_ms:.3f} | {2 * lat.p50_ms:.3f} | {lat.p50_ms:+.4g} (+100.0 %) |"
    assert any(
        line.startswith(p50) and "REGRESSION: breaches p50:+50%; rank test agrees" in line for line in lines
    )
    f1 = base.figure("f1@0ms")
    assert f1 is not None and f1.value is not None and f1.low is not None and f1.high is not None
    side = f"{f1.value * 100:.2f} % 95 % [{f1.low * 100:.2f} %, {f1.high * 100:.2f} %]"
    assert f"| F1@0ms | {side} | {side} | +0.00 pp (+0.0 %) | no rule |" in lines
    assert (
        "| energy per frame (J) | null: " in text
        and "| – | not compared: null in base, null in head |" in text
    )


def test_strings_from_results_are_escaped() -> None:
    assert escape_md("a|b <script>x</script> *y* _z_ [l](u)\nnext") == (
        "a\\|b &lt;script&gt;x&lt;/script&gt; \\*y\\* \\_z\\_ \\[l\\](u) next"
    )
    head = RunHeadline(
        run="r|1",
        run_id="r|1",
        protocols=["causality"],
        adapter="evil|<b>name</b>",
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
        fingerprint=None,
        fingerprint_reason="causality.json record no environment fingerprint",
        figures=[
            Figure(
                key="check[occlusion]",
                label="causality check occlusion",
                unit="check",
                better="higher",
                value=0.0,
                reason="changed | at 3",
            ),
            Figure(
                key="check[caching]",
                label="causality check caching",
                unit="check",
                better="higher",
                value=1.0,
            ),
        ],
    )
    text = run_markdown(head)
    assert text.splitlines()[0] == "### streambench run r\\|1"
    assert "adapter evil\\|&lt;b&gt;name&lt;/b&gt; · protocol causality · 2026-01-02 03:04:05 UTC" in text
    assert (
        "| causality check occlusion | FAIL: changed \\| at 3 |  |  |" in text
        and "| causality check caching | pass |" in text
    )
    assert "<b>" not in text


def test_format_value() -> None:
    assert [
        format_value(v, u) for v, u in [(0.81234, ""), (0.12345, "ms"), (7355.4, "fps"), (0.0033991, "x")]
    ] == [
        "0.8123",
        "0.123",
        "7355",
        "0.003399",
    ]
    assert format_value(None, "ms") == "null" and format_value(1.0, "check") == "pass"


def test_the_measurement_verdict_is_shown_beside_the_figures(run: tuple[RunResult, Path]) -> None:
    """Issue 27 item 2: ``show``, ``show --markdown`` and ``compare --markdown`` say VALID / INVALID with the
    reasons wherever the figures are; the timing changes of an INVALID comparison are marked."""
    from streambench.harness.results.compare import compare_each
    from streambench.harness.results.markdown import compare_many_markdown
    from streambench.harness.results.quality import judge_quality

    _, run_dir = run
    base = load_headline(run_dir)
    assert base.measurement is not None
    verdict = f"measurement {base.measurement.verdict}"
    assert run_markdown(base).splitlines()[4].startswith(verdict[0].upper() + verdict[1:])
    shown = CliRunner().invoke(app, ["show", str(run_dir)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and verdict in shown.output
    invalid = judge_quality(np.full(50, 1_000_000), 1, 0, 1.0)  # too few frames for its p99
    busy = base.model_copy(update={"run": "busy", "measurement": invalid})
    assert run_markdown(busy).splitlines()[4] == (
        "**measurement INVALID: p99 of 50 frames is not a percentile: it needs at least 100 frames**: its "
        "latency figures are not a measurement of the model alone"
    )
    from streambench.harness.cli.results import brief

    assert brief(busy).endswith(" · measurement INVALID") and "INVALID" not in brief(base)  # `runs`
    text = compare_markdown(compare_runs(base, busy))
    assert "- timing changes are not measurements (busy: measurement INVALID: p99 of 50 frames is" in text
    p50 = next(line for line in text.splitlines() if line.startswith("| latency p50 (ms)"))
    f1 = next(line for line in text.splitlines() if line.startswith("| F1@100ms"))
    assert "+0 (+0.0 %) (INVALID)_" in p50 and "INVALID" not in f1  # the timings only
    assert "(INVALID)" not in compare_markdown(compare_runs(base, base))
    many = compare_many_markdown(compare_each(base, [base, busy], FailOnSpec.parse("f1@100ms:-1pp")))
    named = "reference-causal (reference)"
    assert many.startswith(f"## streambench compare: base {named} (md-run) against 2 runs\n\n**No regression")
    assert many.count(f"### streambench compare {named} (md-run) → ") == 2
