"""The sweep report of capacity runs (issue 28, item 8: "the sweep report plots capacity against the
knob"; harness/sweep/report_headline.py): a table of each configuration's capacity with its interval and
how its search ended, and capacity plotted against each grid knob that varies, per environment
fingerprint. The store is written here, made-up but valid ``capacity.json`` files, so the figures are
known; one slow test runs examples/capacity_sweep.toml end to end."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from streambench.adapters.contract import AdapterInfo
from streambench.harness.cli import app
from streambench.harness.runs.capacity import RESULT_FILE, CapacityResult
from streambench.harness.sweep.report import SweepReport, build_sweep_report, sweep_markdown
from streambench.harness.sweep.report_headline import knob_plots
from streambench.harness.sweep.report_html import write_sweep_html
from streambench.harness.sweep.spec import RunSpec, SweepFile, expand, load_sweep
from streambench.protocols.capacity import CapacityConfig
from streambench.protocols.capacity_score import CapacityScore

ROOT = Path(__file__).resolve().parents[3]
HERE, THERE = "0123456789abcdef", "ffffffffffffffff"
QUICK = {"streams": 4, "confidence": 0.8, "target_miss_rate": 0.05, "min_point_s": 1.0, "deadline_ms": 40}


def _sweep(grid: dict[str, list[Any]], seeds: tuple[int, ...] = (0, 1)) -> SweepFile:
    return SweepFile.model_validate(
        {
            "sweep": {"name": "cap", "seeds": list(seeds)},
            "run": {"data": {"kind": "synthetic", "num_streams": 2, "duration_s": 2.0}},
            "adapters": [{"adapter": "reference"}],
            "protocols": {"capacity": {"config": QUICK}},
            "grid": grid,
        }
    )


def _write(
    results: Path, spec: RunSpec, interval: tuple[int, int | None], status: str, fingerprint: str
) -> None:
    """A capacity.json for ``spec``: capacity = the interval's low end, as the search reports it."""
    config = CapacityConfig.model_validate(spec.protocol_config)
    score = CapacityScore(
        deadline_ms=config.deadline_ms or 40.0,
        capacity=interval[0],
        interval=interval,
        status=status,  # type: ignore[arg-type]
        planned_frames=32,
        one_stream_f1=None,
        curve=[],
    )
    result = CapacityResult(
        run_id=spec.run_id,
        created_at=datetime.now(timezone.utc),
        adapter=spec.run.adapter,
        adapter_info=AdapterInfo(name="reference", classes=("background", "event"), modalities=("audio",)),
        config=config,
        run=spec.run,
        score=score,
        cores=2,
        fingerprint=fingerprint,
    )
    (results / spec.run_id).mkdir(parents=True)
    (results / spec.run_id / RESULT_FILE).write_text(result.model_dump_json(), encoding="utf-8")


SERVING_BY_REPLICAS = {"capacity.serving": ["replicas", "batched"], "capacity.replicas": [1, 2]}
MADE_UP = {  # (serving, replicas, seed) -> (interval, status)
    ("replicas", 1, 0): ((5, 5), "found"),
    ("replicas", 1, 1): ((5, 5), "found"),
    ("replicas", 2, 0): ((9, 9), "found"),
    ("replicas", 2, 1): ((11, 11), "found"),
    ("batched", 1, 0): ((16, None), "budget"),
    ("batched", 1, 1): ((16, None), "budget"),
    ("batched", 2, 0): ((12, 13), "found"),
    ("batched", 2, 1): ((14, None), "budget"),
}


def _store(tmp_path: Path, fingerprint_of_seed: dict[int, str]) -> tuple[SweepReport, Path]:
    sweep = _sweep(SERVING_BY_REPLICAS)
    results = tmp_path / "results"
    for spec in expand(sweep):
        interval, status = MADE_UP[(spec.grid["capacity.serving"], spec.grid["capacity.replicas"], spec.seed)]
        _write(results, spec, interval, status, fingerprint_of_seed[spec.seed])
    return build_sweep_report(sweep, results), results


def _table(markdown: str, title_start: str) -> list[list[str]]:
    """The body rows of the markdown table under the heading that starts with ``title_start``."""
    section = markdown.split(f"### {title_start}", 1)[1].split("###", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")][1:]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]


def test_the_table_gives_each_configurations_capacity_interval_and_how_its_search_ended(
    tmp_path: Path,
) -> None:
    report, _ = _store(tmp_path, {0: HERE, 1: HERE})
    markdown = sweep_markdown(report)
    rows = _table(markdown, f"capacity (capacity protocol) on environment {HERE}")
    assert rows == [
        ["reference", "capacity.serving=replicas capacity.replicas=1", "2 of 2", "capacity@40ms",
         "5 (the 2 runs agree)", "[5, 5]", "found"],
        ["reference", "capacity.serving=replicas capacity.replicas=2", "2 of 2", "capacity@40ms",
         "10 (range 9–11 over 2 runs)", "[9, 11]", "found"],
        ["reference", "capacity.serving=batched capacity.replicas=1", "2 of 2", "capacity@40ms",
         "16 (the 2 runs agree)", "[16, ?]", "budget ended first (bracket)"],
        ["reference", "capacity.serving=batched capacity.replicas=2", "2 of 2", "capacity@40ms",
         "13 (range 12–14 over 2 runs)", "[12, ?]",
         "found: 1 of 2 runs; budget ended first (bracket): 1 of 2 runs"],
    ]  # fmt: skip
    # capacity is the machine's figure: never in the hardware-independent table, never a "timing" row
    assert "Quality: capacity" not in markdown and "### Timings" not in markdown
    assert "(never mixed with other fingerprints)" in markdown


def test_the_plot_draws_capacity_against_each_knob_one_line_per_value_of_the_others(tmp_path: Path) -> None:
    report, results = _store(tmp_path, {0: HERE, 1: HERE})
    (group,) = report.headlines()
    serving, replicas = knob_plots(group.rows)
    # serving: categorical, its values in the sweep's order; one line per number of replicas
    assert serving.knob == "capacity.serving" and serving.categorical
    assert serving.ticks == [(0.0, "replicas"), (1.0, "batched")]
    lines = {line.name: line for line in serving.lines}
    assert list(lines) == ["reference capacity.replicas=1", "reference capacity.replicas=2"]
    one, two = lines["reference capacity.replicas=1"], lines["reference capacity.replicas=2"]
    assert (one.x, one.y, one.low, one.high) == ([0.0, 1.0], [5.0, 16.0], [5.0, 16.0], [5.0, None])
    assert (two.x, two.y, two.low, two.high) == ([0.0, 1.0], [10.0, 13.0], [9.0, 12.0], [11.0, None])
    # replicas: numeric, at its values; one line per serving mode
    assert replicas.knob == "capacity.replicas" and not replicas.categorical
    assert replicas.ticks == [(1.0, "1"), (2.0, "2")]
    by_mode = {line.name: (line.x, line.y) for line in replicas.lines}
    assert by_mode == {
        "reference capacity.serving=replicas": ([1.0, 2.0], [5.0, 10.0]),
        "reference capacity.serving=batched": ([1.0, 2.0], [16.0, 13.0]),
    }
    page = write_sweep_html(report, tmp_path / "sweep.html", results)[0].read_text()
    section = page.split("capacity (capacity protocol) on environment", 1)[1]
    assert page.count('<svg class="plot"') == 2  # one plot per knob that varies
    assert "<code>capacity.serving</code> (categorical axis)" in section
    assert "<code>capacity.replicas</code> (at its values)" in section
    svg = section.split('<svg class="plot"', 1)[1].split("</svg>", 1)[0]
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert {"replicas", "batched", "capacity.serving", "capacity@40ms"} <= set(texts)  # ticks, axes
    assert "[16, ?]" in section and "budget ended first (bracket)" in section


def test_runs_on_two_fingerprints_are_never_mixed(tmp_path: Path) -> None:
    report, results = _store(tmp_path, {0: HERE, 1: THERE})
    here, there = report.headlines()
    assert (here.fingerprint, there.fingerprint) == (HERE, THERE)
    assert [(r.done, r.planned) for r in here.rows + there.rows] == [(1, 2)] * 8
    assert [r.value.median for r in here.rows if r.value] == [5, 9, 16, 12]  # seed 0's alone
    assert [r.value.median for r in there.rows if r.value] == [5, 11, 16, 14]  # seed 1's alone
    markdown = sweep_markdown(report)
    mine = _table(markdown, f"capacity (capacity protocol) on environment {HERE}")
    theirs = _table(markdown, f"capacity (capacity protocol) on environment {THERE}")
    assert [row[4] for row in mine] == ["5", "9", "16", "12"]
    assert [row[4] for row in theirs] == ["5", "11", "16", "14"]
    assert [row[5] for row in theirs] == ["[5, 5]", "[11, 11]", "[16, ?]", "[14, ?]"]
    plots = {fp: knob_plots(g.rows) for fp, g in ((HERE, here), (THERE, there))}
    assert [line.y for line in plots[HERE][1].lines] == [[5.0, 9.0], [16.0, 12.0]]
    assert [line.y for line in plots[THERE][1].lines] == [[5.0, 11.0], [16.0, 14.0]]
    page = write_sweep_html(report, tmp_path / "sweep.html", results)[0].read_text()
    assert f"on environment {HERE}" in page and f"on environment {THERE}" in page
    assert page.count('<svg class="plot"') == 4  # two knobs on each environment


def test_a_deadline_knob_is_one_series_on_a_numeric_axis(tmp_path: Path) -> None:
    """capacity@20ms, @40ms and @80ms are one figure, capacity, plotted against the deadline at its
    values; a knob with one value is not plotted against."""
    sweep = _sweep({"capacity.deadline_ms": [80, 20, 40], "capacity.serving": ["batched"]}, seeds=(0,))
    results = tmp_path / "results"
    for spec, low in zip(expand(sweep), (12, 2, 6), strict=True):
        _write(results, spec, (low, low), "found", HERE)
    (group,) = build_sweep_report(sweep, results).headlines()
    assert [r.keys for r in group.rows] == [["capacity@80ms"], ["capacity@20ms"], ["capacity@40ms"]]
    assert group.axis_label() == "capacity"
    (plot,) = knob_plots(group.rows)
    assert plot.knob == "capacity.deadline_ms" and not plot.categorical
    assert plot.ticks == [(20.0, "20"), (40.0, "40"), (80.0, "80")]
    (line,) = plot.lines
    assert (line.name, line.x, line.y) == (
        "reference capacity.serving=batched",
        [20.0, 40.0, 80.0],
        [2, 6, 12],
    )


@pytest.mark.slow
def test_the_example_capacity_sweep_runs_and_reports_capacity_against_its_knobs(tmp_path: Path) -> None:
    """examples/capacity_sweep.toml end to end: four capacity searches, each in its own process, then the
    report (markdown on stdout, the page beside the store)."""
    store = tmp_path / "results"
    example = ROOT / "examples" / "capacity_sweep.toml"
    argv = ["sweep", str(example), "--output-dir", str(store), "--report", "--no-progress"]
    done = CliRunner().invoke(app, argv)
    assert done.exit_code == 0, done.output
    report = build_sweep_report(load_sweep(example), store)
    assert report.count("done") == 4
    (group,) = report.headlines()
    assert [r.keys for r in group.rows] == [["capacity@40ms"]] * 4
    assert all(r.ended == {"fixed N, no search": 1} for r in group.rows)
    assert [p.knob for p in knob_plots(group.rows)] == ["capacity.serving", "capacity.replicas"]
    page = (store / "sweep-capacity.html").read_text()
    assert page.count('<svg class="plot"') == 2
    assert "fixed N, no search" in done.output
