"""``streambench run --protocol stability``: the engine records features, both protocols score them."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import EngineConfig
from streambench.harness.runs.stability import (
    ARRAYS_FILE,
    RESULT_FILE,
    StabilityResult,
    cli_run,
    execute_stability,
    print_result,
)
from streambench.protocols.recording import from_arrays
from streambench.protocols.stability import StabilityConfig, score

DATA = SyntheticConfig(seed=0, num_streams=3, duration_s=4.0, max_event_segments=3)


def config(tmp_path: Path, variant: str, **extra: object) -> RunConfig:
    return RunConfig.model_validate(
        {
            "adapter": "topk-encoder",
            "adapter_options": {"variant": variant},
            "data": DATA,
            "engine": EngineConfig(warmup_frames=10),
            "output_dir": tmp_path,
            "run_id": f"stab-{variant}",
            **extra,
        }
    )


@pytest.mark.processes
def test_window_run_is_more_stable_and_rescorable(tmp_path: Path) -> None:
    results = {}
    for variant in ("timestep", "window"):
        result, run_dir = execute_stability(config(tmp_path, variant), StabilityConfig())
        assert run_dir == tmp_path / f"stab-{variant}"
        on_disk = StabilityResult.model_validate_json((run_dir / RESULT_FILE).read_text())
        assert on_disk.report == result.report and on_disk.events == result.events
        # the saved recordings (features included) re-score to the same figures
        with np.load(run_dir / ARRAYS_FILE, allow_pickle=False) as arrays:
            recordings = from_arrays(dict(arrays))
        assert [r.features.shape for r in recordings if r.features is not None] == [(100, 16)] * 3
        assert score(recordings, StabilityConfig()) == result.report
        results[variant] = result
    per_step, window = results["timestep"], results["window"]
    assert per_step.adapter_name == "topk-encoder-timestep" and window.adapter_name == "topk-encoder-window"
    for r in (per_step, window):
        assert (r.report.k, r.report.num_features, len(r.report.streams)) == (16, 256, 3)
        assert r.report.overall.num_frames == 300 and r.report.overall.num_steps == 297
        assert [p.delta_ms for p in r.events.curve] == [0, 50, 100, 200, 500, 1000]
        assert set(r.events.stream_f1) == {s.stream_id for s in r.report.streams}
    j_t, j_w = per_step.report.overall.jaccard, window.report.overall.jaccard
    assert j_t is not None and j_w is not None and j_w > j_t + 0.4
    assert window.report.overall.flips < 0.5 * per_step.report.overall.flips
    # the relation: measured flips between the exact-K value and the 2K(1 − J) bound
    for r in (per_step, window):
        rel = r.report.overall.relation
        assert rel.exact_k is not None and rel.bound is not None
        assert rel.exact_k - 1e-9 <= rel.flips <= rel.bound + 1e-9


@pytest.mark.processes
def test_cli_run_defaults_and_protocol_config_file(tmp_path: Path) -> None:
    default = config(tmp_path, "timestep").model_copy(
        update={"adapter": "reference", "adapter_options": {}, "run_id": "dflt"}
    )
    cfg = tmp_path / "stability.toml"
    cfg.write_text('feature_kind = "indices"\nk = 20\nper_stream = false\n')
    result, _ = cli_run(default, cfg)
    assert result.adapter == "topk-encoder" and result.adapter_name == "topk-encoder-timestep"
    assert result.config.k == 20 and result.report.k == 20 and result.report.streams == []
    bad = tmp_path / "bad.json"
    bad.write_text('{"feature_kind": "sparse"}')
    with pytest.raises(ValueError, match=r"bad\.json: invalid stability configuration") as info:
        cli_run(default, bad)
    assert "feature_kind" in str(info.value)
    with pytest.raises(ValueError, match="unpaced"):
        cli_run(config(tmp_path, "window", engine=EngineConfig(pacing="paced")), None)


@pytest.mark.processes
def test_print_result_shows_every_figure(tmp_path: Path) -> None:
    result, _ = execute_stability(config(tmp_path, "window"), StabilityConfig())
    buffer = io.StringIO()
    assert print_result(Console(file=buffer, width=120), result) == 0
    text = buffer.getvalue()
    overall = result.report.overall
    for label in (
        "Jaccard",
        "lifetime, mean over runs",
        "lifetime, mean over features",
        "transient ratio",
        "turnover",
        "flips per step",
        "2K(1 − Jaccard)",
        "F1@0 ms",
        "F1@1000 ms",
        "per stream",
    ):
        assert label in text, label
    assert f"{overall.jaccard:.3f}" in text and f"{overall.flips:.2f}" in text
    assert f"{overall.relation.bound:.2f}" in text
    assert f"{100 * result.events.curve[0].f1_micro:.1f}" in text


@pytest.mark.processes
def test_command_line(tmp_path: Path) -> None:
    args = ["run", "--protocol", "stability", "--adapter", "topk-encoder", "--option", "variant=window"]
    args += ["--streams", "2", "--warmup-frames", "5", "--no-progress", "--no-report"]
    res = CliRunner().invoke(app, [*args, "--output-dir", str(tmp_path), "--run-id", "cli"])
    assert res.exit_code == 0, res.output
    assert "Temporal stability" in res.output and "topk-encoder-window" in res.output
    written = StabilityResult.model_validate_json((tmp_path / "cli" / RESULT_FILE).read_text())
    assert written.run.adapter_options == {"variant": "window"} and len(written.report.streams) == 2
    assert written.report.overall.num_frames == 500
