"""Issue 27, as a reader sees it: ``streambench score online --exclude-classes`` re-scores a saved run,
``streambench show`` lists the event figures, the run report has an event-detection section and the run
summary an event table, each with the numbers of the result and a plain sentence of what they mean.

One saved run of a binary task (the synthetic data with one event class besides the background) serves
every test; it runs in-process (about 10 s), so the tests are in the slow tier.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from markupsafe import escape
from rich.console import Console
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.report.sections_events import events_section
from streambench.harness.results.files import load_result
from streambench.harness.results.summary import print_summary
from streambench.harness.runs.catalog import load_bundle
from streambench.harness.runs.session import execute_run

pytestmark = pytest.mark.slow
runner = CliRunner()


@pytest.fixture(scope="module")
def binary_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved online run of a binary task: the synthetic data with one event class besides background."""
    config = RunConfig.model_validate(
        {
            "data": {"num_streams": 2, "duration_s": 3.0, "num_event_classes": 1, "seed": 0},
            "engine": {"warmup_frames": 10},
            "isolate": False,
            "output_dir": tmp_path_factory.mktemp("binary"),
            "run_id": "binary",
        }
    )
    _, _, run_dir = execute_run(config)
    return run_dir


def test_score_online_rescores_a_saved_run_without_the_excluded_classes(binary_run: Path) -> None:
    """Issue 27: a binary task scores its positive class by default; ``--exclude-classes`` re-scores a saved
    run with classes left out (here the background: the same positive-class F1, now by exclusion)."""
    default = json.loads(runner.invoke(app, ["score", "online", str(binary_run), "--json"]).output)
    assert default["classes"] == ["background", "event_00"] and default["scored_classes"] == ["event_00"]
    assert default["events"]["background_class"] == "background"
    args = ["score", "online", str(binary_run), "--exclude-classes", "background"]
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    excluded = json.loads(res.output)
    assert excluded["classes"] == excluded["scored_classes"] == ["event_00"]
    assert excluded["scored_rule"] == "every class but the excluded ['background']"
    point, same = (doc["overall"]["accuracy"]["curves"]["frame"]["strict"][0] for doc in (default, excluded))
    assert point["f1_micro"] == same["f1_micro"]  # the event column, decided by the same threshold
    assert point["f1_micro_all_classes"] != point["f1_micro"]  # over both classes: another figure
    table = runner.invoke(app, args)
    assert table.exit_code == 0 and "F1 counts: every class but the excluded ['background']" in table.output
    assert "Event detection" in table.output


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ("speech", "--exclude-classes: exclude_classes: unknown class(es) ['speech']"),
        ("background,event_00", "--exclude-classes: exclude_classes leaves no class to score"),
    ],
)
def test_score_online_refuses_a_bad_exclusion_in_one_line(binary_run: Path, names: str, message: str) -> None:
    res = runner.invoke(app, ["score", "online", str(binary_run), "--exclude-classes", names])
    assert res.exit_code == 2 and message in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) <= 2


def test_show_lists_the_event_figures_of_the_result(binary_run: Path) -> None:
    res = runner.invoke(app, ["show", str(binary_run), "--json"])
    assert res.exit_code == 0, res.output
    figures = {f["key"]: f for f in json.loads(res.output)["figures"]}
    events = load_result(binary_run).metrics.events
    assert events is not None
    assert figures["event_f1"]["value"] == events.overall.f1
    assert figures["false_alarms_per_h"]["value"] == events.overall.false_alarms_per_hour
    assert figures["event_miss_rate"]["value"] == events.overall.missed / events.overall.reference_events
    table = runner.invoke(app, ["show", str(binary_run)])
    assert "event F1 (onset ±200 ms)" in table.output and "false alarms per hour" in table.output


def test_the_report_section_shows_the_results_numbers_and_says_what_they_mean(binary_run: Path) -> None:
    bundle = load_bundle(binary_run)
    result = bundle.result
    assert result is not None and result.metrics.events is not None
    html = events_section(bundle)
    assert html.startswith("<p>How long after an event starts the model flags it (onset delay)")
    pooled = result.metrics.events.overall
    assert (
        f"<td>all event classes</td><td>{pooled.reference_events}</td><td>{pooled.detected_events}</td>"
        in html
    )
    assert escape("('background')") in html and "±200 ms" in html
    # where the data has no event labels: the reason, no table
    metrics = result.metrics.model_copy(
        update={"events": None, "events_reason": "the classes have no background"}
    )
    bundle.results = {name: result.model_copy(update={"metrics": metrics}) for name in bundle.results}
    assert events_section(bundle) == '<p class="absent">Not shown: the classes have no background</p>'


def test_the_run_summary_prints_the_scored_classes_and_the_event_table(binary_run: Path) -> None:
    result = load_result(binary_run)
    console = Console(file=io.StringIO(), width=200)
    print_summary(console, result)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "F1 counts: binary task: F1 of the positive class 'event_00'" in text
    pooled = result.metrics.events.overall  # type: ignore[union-attr]
    row = next(line for line in text.splitlines() if "all event classes" in line)
    cells = [c.strip() for c in row.split("│") if c.strip()]
    assert cells[:3] == ["all event classes", str(pooled.reference_events), str(pooled.missed)]
