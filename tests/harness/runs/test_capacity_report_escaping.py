"""The capacity section of the run report (harness/runs/capacity_report.py) holds a hostile value only as
text: the adapter, the run's name, the reference F1 was held against, the search's notes, the environment,
and the data-set stream named where a failed search stopped (:mod:`tests.harness.report.hostile`). The
file is the version-1 ``capacity.json`` of tests/data, read as the report reads it."""

from __future__ import annotations

import shutil
from pathlib import Path

from streambench.harness.instruments.host_items import Item
from streambench.harness.report import build_report
from streambench.harness.runs.capacity import RESULT_FILE, CapacityResult
from streambench.harness.runs.catalog import load_bundle
from streambench.protocols.capacity_records import CapacityFailure
from tests.harness.report.hostile import Planter, assert_only_escaped

OLD = Path(__file__).resolve().parents[2] / "data" / "capacity_v1.json"


def test_the_capacity_section_shows_every_planted_value_as_text(tmp_path: Path) -> None:
    plant = Planter()

    pages = []
    for searched in (True, False):  # a curve, or a search that failed before its first point
        run_dir = tmp_path / f"run-{searched}"
        run_dir.mkdir()
        shutil.copy(OLD, run_dir / RESULT_FILE)
        bundle = load_bundle(run_dir)
        result = bundle.results["capacity"]
        assert isinstance(result, CapacityResult) and result.score.curve and result.environment is not None
        bundle.name, bundle.title = plant(f"run_id.{searched}"), plant(f"model_name.{searched}")
        if searched:
            result.adapter = plant("adapter")
            result.score.f1_reference = plant("f1_reference")
            result.score.notes = [plant("note")]
            result.environment = result.environment.model_copy(update={"cpu_model": Item(value=plant("cpu"))})
            result.fingerprint = plant("fingerprint")
        else:
            result.score.curve = []
            result.score.failure = CapacityFailure(
                streams=4,
                phase="point",
                kind="error",
                stream=2,
                source=plant("failure.source"),
                frame=17,
                error_type="ValueError",
                message="shape",
            )
        pages.append(build_report([bundle]))
    assert '<svg class="plot"' in pages[0] and "no point was measured" in pages[1]
    assert_only_escaped("".join(pages), plant.planted)
