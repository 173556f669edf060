"""``streambench run --protocol capacity`` (harness/runs/capacity.py): its result file, headline, report
section, and the command line's answer to bad settings (exit 2, one line naming the setting)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.report.bundle import RunBundle
from streambench.harness.runs import registry
from streambench.harness.runs.capacity import CapacityResult, execute_capacity
from streambench.protocols.capacity import CapacityConfig

QUICK = {
    "streams": 2,
    "confidence": 0.5,
    "target_miss_rate": 0.2,
    "slack_misses": 0,
    "min_point_s": 0.5,
    "budget_s": 30,
}


@pytest.mark.processes
def test_a_capacity_run_writes_its_result_headline_and_report_section(tmp_path: Path) -> None:
    run = RunConfig.model_validate(
        {
            "adapter": "busywait",
            "adapter_options": {"duration_us": 500},
            "data": {"seed": 3, "num_streams": 2, "duration_s": 2},
            "engine": {"warmup_frames": 5},
            "output_dir": tmp_path,
            "run_id": "cap",
            "isolate": False,
        }
    )
    result, run_dir = execute_capacity(run, CapacityConfig.model_validate(QUICK))
    assert (run_dir / "capacity.json").is_file() and result.execution_mode == "in-process"
    protocol = registry.get("capacity")
    loaded = protocol.load_result(run_dir)
    assert isinstance(loaded, CapacityResult) and loaded.score.status == "fixed"
    assert [p.streams for p in loaded.score.curve] == [1, 2]
    assert loaded.score.deadline_ms == 40.0  # one frame period at 25 frames/s
    (figure,) = protocol.headline(loaded)
    assert figure.key == "capacity@40ms" and figure.value == float(loaded.score.capacity)
    assert any("own process" in note for note in loaded.score.notes)  # in-process: the dispatcher's figures
    bundle = RunBundle(run_dir=run_dir, name="cap")
    protocol.read(run_dir, bundle)
    (section,) = protocol.report_sections()
    html = section.render(bundle)
    assert "<svg" in html and "capacity" in html and "N" in html


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ("deadline_ms = 0", "deadline_ms"),
        ("streams = 0", "streams"),
        pytest.param("serving = 'batched'", "max_batch", marks=pytest.mark.slow),  # starts a worker
    ],
)
def test_bad_settings_exit_2_naming_the_setting(tmp_path: Path, settings: str, named: str) -> None:
    config = tmp_path / "capacity.toml"
    config.write_text(settings + "\nbudget_s = 5\n")
    command = ["run", "--protocol", "capacity", "--adapter", "reference-lookahead", "--protocol-config"]
    command += [str(config), "--streams", "2", "--duration", "1", "--seed", "1"]
    done = CliRunner().invoke(app, [*command, "--output-dir", str(tmp_path / "results")])
    assert done.exit_code == 2, done.output
    first = done.output.strip().splitlines()[0]
    assert first.startswith("error:") and named in first
