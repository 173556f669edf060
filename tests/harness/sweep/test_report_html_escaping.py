"""The sweep's page (harness/sweep/report_html.py) holds a hostile value only as text: the sweep's and the
adapters' labels, settings, run ids, fingerprints, figure keys, grid knobs, how a search ended, a failed
run's error and why a speed-up is missing, as a sweep file and its run store can hold them
(:mod:`tests.harness.report.hostile`)."""

from __future__ import annotations

from pathlib import Path

from streambench.harness.sweep.report import RunRow, SweepReport
from streambench.harness.sweep.report_headline import SweptFigure
from streambench.harness.sweep.report_html import write_sweep_html
from tests.harness.report.hostile import Planter, assert_only_escaped


def test_the_sweep_page_shows_every_planted_value_as_text(tmp_path: Path) -> None:
    plant = Planter()

    fingerprint, knob, key = plant("fingerprint"), plant("grid.knob"), plant("figure.key")
    online = [
        RunRow(
            run_id=plant(f"run_id{i}"),
            label=plant(f"label{i}"),
            protocol="online",
            config=plant(f"config{i}"),
            seed=0,
            repeat=0,
            status="done",
            setting=plant(f"setting{i}"),
            fingerprint=fingerprint,
            quality={"f1@100ms": 0.5 + 0.1 * i, key: 0.25},
            timings={"mean": 1.0 + i, "fps": 1e3 / (1.0 + i)},
            speedup_reason=plant(f"speedup.reason{i}"),
        )
        for i in range(2)
    ]
    failed = RunRow(
        run_id=plant("failed.run_id"),
        label=online[0].label,
        protocol="online",
        config=online[0].config,
        seed=1,
        repeat=0,
        status="failed",
        setting=plant("failed.setting"),
        attempts=2,
        error=plant("failed.error"),
    )
    figure = {
        "name": plant("figure.name"),
        "key": plant("capacity.key"),
        "ended": plant("ended"),
        "timed": True,
    }
    capacity = [
        RunRow(
            run_id=f"cap{value}",
            label=plant(f"capacity.label{value}"),
            protocol="capacity",
            config=f"{knob}={value}",
            seed=0,
            repeat=0,
            status="done",
            setting="seed=0",
            fingerprint=fingerprint,
            grid={knob: value},
            figure=SweptFigure(value=4.0 * value, low=4.0 * value, high=None, **figure),
        )
        for value in (1, 2)
    ]
    report = SweepReport(
        name=plant("sweep.name"), baseline=plant("baseline"), rows=[*online, failed, *capacity]
    )
    (page,) = write_sweep_html(report, tmp_path / "sweep.html", tmp_path / "store")
    html = page.read_text(encoding="utf-8")
    assert html.count('<svg class="plot"') == 2  # the Pareto front, capacity against the knob
    assert_only_escaped(html, plant.planted)
