"""The sweep report (harness/sweep/report.py, report_html.py): repeats of one configuration as one row
with median and range."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streambench.harness.sweep.report import sweep_markdown
from streambench.harness.sweep.report_html import write_sweep_html


def _run_row(label: str, repeat: int, mean_ms: float | None, f1: float, status: str = "done") -> Any:
    from streambench.harness.sweep.report import RunRow

    done = status == "done"
    return RunRow(
        run_id=f"{label}-{repeat}",
        label=label,
        protocol="online",
        config="",
        seed=0,
        repeat=repeat,
        setting=f"seed=0 repeat={repeat}",
        status=status,
        fingerprint="fp" if done else None,
        quality={"f1@0ms": f1, "f1@100ms": f1} if done else {},
        timings={"mean": mean_ms, "fps": None if mean_ms is None else 1e3 / mean_ms} if done else {},
    )


def test_repeats_are_one_configuration_with_median_and_range(tmp_path: Path) -> None:
    """Issue 17: three repeats of one model are one configuration (median, range over the runs), so the
    fastest repeat never "dominates" the others; a failed repeat is counted, not averaged in."""
    from streambench.harness.sweep.report import SweepReport
    from streambench.harness.sweep.report_html import pareto_points

    rows = [
        _run_row("ref", 0, 0.0428, 0.7642),
        _run_row("ref", 1, 0.0316, 0.7642),
        _run_row("ref", 2, 0.0324, 0.7642),
        _run_row("null model", 0, 7.6e-5, 0.0),
        _run_row("null model", 1, None, 0.0, status="failed"),
    ]
    report = SweepReport(name="agg", baseline=None, rows=rows)
    ref, null = report.configurations()
    assert (ref.planned, ref.done, ref.failed, ref.repeats) == (3, 3, 0, 3)
    assert (null.planned, null.done, null.failed) == (2, 1, 1)
    f1 = ref.figures["f1@0ms"]
    assert f1 is not None and f1.median == 0.7642 and not f1.varies and f1.n == 3
    timed_ref, timed_null = report.timings("fp")
    assert timed_null.done == 1  # the failed repeat has no timings to aggregate
    mean = timed_ref.figures["mean"]
    assert mean is not None and (mean.median, mean.low, mean.high) == (0.0324, 0.0316, 0.0428)
    points, key = pareto_points(report, report.timings("fp"))
    assert key == "f1@100ms" and [p.label for p in points] == ["ref", "null model"]
    assert points[0].cost == 0.0324 and points[0].cost_range == (0.0316, 0.0428)
    markdown = sweep_markdown(report)
    assert "| ref | — | 3 of 3 | 32.4 µs (range 31.6–42.8 µs over 3 runs) |" in markdown
    assert "| null model | — | 2 of 2, 1 failed |" not in markdown  # timings count finished runs only
    assert "| null model | — | 1 of 2, 1 failed | 0.00 % | 0.00 % |" in markdown
    assert "| ref | — | 3 of 3 | 76.42 % (the 3 runs agree) |" in markdown  # a share in percent, as the CLI
    assert "30,860 fps (range 23,360–31,650 fps over 3 runs)" in markdown
    assert "13,160,000 fps" in markdown and "e+0" not in markdown  # FPS for humans, no exponent
    page = write_sweep_html(report, tmp_path / "agg.html", tmp_path)[0].read_text()
    assert page.count('<svg class="plot"') == 1  # the Pareto plot; no run directory here, no CDF
    assert "30,860 fps" in page and "range 23,360–31,650 fps over 3 runs" in page
