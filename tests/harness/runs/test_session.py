"""End to end: an online run's session (harness/runs/session.py), its result files, and the README's
adapter example."""

from __future__ import annotations

import json
import platform
import re
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

from streambench.harness.execution.config import RunConfig
from streambench.harness.results.files import RunResult, load_recordings, load_result
from streambench.harness.runs.session import execute_run
from streambench.protocols import online
from tests.support import run_streambench

README = Path(__file__).resolve().parents[3] / "README.md"


def small(tmp_path: Path, **changes: object) -> RunConfig:
    base: dict[str, object] = {"data": {"num_streams": 6, "seed": 0}, "output_dir": tmp_path, "run_id": "run"}
    base.update(changes)
    return RunConfig.model_validate(base)


@pytest.mark.processes
def test_reference_run_writes_a_valid_result(tmp_path: Path) -> None:
    result, recordings, run_dir = execute_run(small(tmp_path))
    assert run_dir == tmp_path / "run"
    loaded = load_result(run_dir)
    assert loaded == result
    assert RunResult.model_validate(json.loads((run_dir / "result.json").read_text())) == result
    assert result.schema_version == 3 and result.warmup is not None and result.warmup.frames == 100
    assert result.streams["test"] == [f"syn-{i:04d}" for i in range(6)]
    assert result.clock.name == "time.perf_counter_ns" and result.seeds.dataset == 0
    # the arrays hold exactly the scored streams (no warm-up frames) and re-score to the same figures
    saved = load_recordings(run_dir)
    assert [r.stream_id for r in saved] == [r.stream_id for r in recordings]
    assert sum(r.num_frames for r in saved) == result.metrics.overall.accuracy.num_frames == 6 * 250
    assert online.score(saved, result.protocol_config, result.adapter_info.classes) == result.metrics
    stages = [row.stage for row in result.metrics.overall.speed.breakdown]
    assert stages[:3] == ["matched filters + fusion", "temporal integration", "softmax head"]
    assert sum(row.share for row in result.metrics.overall.speed.breakdown) == pytest.approx(1.0)
    # what cannot be measured here is null with the reason; what can is there
    resources = result.resources
    assert resources.gpu_energy.available is False and resources.gpu_energy.reason
    assert resources.gpu_energy.energy_j is None and resources.energy_per_frame_j is None
    assert resources.energy_per_frame_reason == resources.gpu_energy.reason
    assert resources.frames_measured == 6 * 250  # warm-up outside the window
    assert resources.memory.peak_rss_bytes >= resources.memory.rss_start_bytes > 0
    assert resources.flops_per_frame == 2 * 29 * (64 + 128)
    assert result.environment.python_version.value == platform.python_version()
    assert result.environment.nvidia_driver.value is None and result.environment.nvidia_driver.reason
    assert len(result.fingerprint) == 16 and result.threads is not None
    assert result.environment.data_hash.value and len(str(result.environment.data_hash.value)) == 64
    f1 = result.metrics.f1_at(0)
    assert 0.3 < f1 < 0.99, f"reference F1@0 = {f1}"
    assert result.metrics.overall.speed.latency.n == 6 * 250


@pytest.mark.processes
def test_lookahead_model_f1_rises_with_delta(tmp_path: Path) -> None:
    result, _, _ = execute_run(small(tmp_path, adapter="reference-lookahead"))
    curve = [p.f1_micro for p in result.metrics.overall.accuracy.curves["frame"]["strict"]]
    assert result.metrics.f1_at(0) < result.metrics.f1_at(500)
    assert curve[0] == 0.0  # every label comes 5 frames = 200 ms late
    assert curve[-1] > 0.5


@pytest.mark.processes
def test_null_adapter_is_scored_as_predicting_background_rarely(tmp_path: Path) -> None:
    result, _, _ = execute_run(small(tmp_path, adapter="null", engine={"warmup_frames": 0}))
    assert result.warmup is None
    # uniform scores over 29 classes are all below 0.5: nothing is ever predicted
    assert result.metrics.f1_at(1000) == 0.0


@pytest.mark.processes
def test_per_class_rule_splits_streams(tmp_path: Path) -> None:
    result, recordings, _ = execute_run(
        small(tmp_path, protocol={"decision": {"kind": "per_class", "validation_fraction": 0.34}})
    )
    assert len(result.streams["validation"]) == 2 and len(result.streams["test"]) == 4
    assert result.metrics.decision.fitted_on == result.streams["validation"]
    assert [r.role for r in recordings].count("validation") == 2


@pytest.mark.processes
def test_readme_adapter_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(# my_adapter\.py\n.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) == 1
    (tmp_path / "my_adapter.py").write_text(blocks[0])
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_adapter", raising=False)
    # the results store beside the adapter, as a user's results/, not around it: the sealed worker
    # cannot read the store, so an adapter inside it could not be imported there
    result, recordings, _ = execute_run(
        small(tmp_path / "results", adapter="my_adapter:LoudnessAdapter", adapter_options={"window": 3})
    )
    assert result.adapter_info.name == "loudness" and len(result.adapter_info.classes) == 29
    assert all(np.allclose(r.scores.sum(axis=1), 1.0) for r in recordings)
    assert 0.0 <= result.metrics.f1_at(0) <= 1.0


@pytest.mark.slow
def test_readme_adapter_example_runs_verbatim_in_a_fresh_directory(tmp_path: Path) -> None:
    """Issue 17: the README's two blocks as a user copies them: my_adapter.py saved in an empty directory,
    then the README's command run there by the installed ``streambench`` (PYTHONPATH names this checkout
    only, as an installed package is found; the adapter's directory is not on it).
    Loudness says nothing about the synthetic classes, so the run must warn that no label was predicted."""
    text = README.read_text()
    (source,) = re.findall(r"```python\n(# my_adapter\.py\n.*?)```", text, flags=re.S)
    (command,) = re.findall(r"```bash\n(streambench run --adapter my_adapter:\S+[^\n]*)\n```", text)
    (tmp_path / "my_adapter.py").write_text(source)
    done = run_streambench(shlex.split(command)[1:], tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    (run_dir,) = (tmp_path / "results").glob("*loudness*")
    assert load_result(run_dir).adapter_options == {"window": 3}
    assert "the model never predicted a label" in " ".join((done.stdout + done.stderr).split())


@pytest.mark.processes
def test_baseline_gives_speedup_and_flops_normalised_latency(tmp_path: Path) -> None:
    # in process (the normalisation is tested, not the worker; the suite stays fast)
    base, _, base_dir = execute_run(small(tmp_path, run_id="base", data={"num_streams": 2}, isolate=False))
    head, _, _ = execute_run(
        small(tmp_path, run_id="head", data={"num_streams": 2}, baseline=base_dir, isolate=False)
    )
    norm = head.normalisation
    assert norm is not None and norm.reason is None and norm.baseline_run == "base"
    mean, base_mean = head.metrics.overall.speed.latency.mean_ms, base.metrics.overall.speed.latency.mean_ms
    assert norm.speedup == pytest.approx(base_mean / mean)
    assert norm.flops_normalised_latency_ms == pytest.approx(mean)  # same model: same FLOPs
    assert load_result(tmp_path / "head").normalisation == norm
    # another environment: refused, with the reason
    doc = json.loads((base_dir / "result.json").read_text())
    doc["fingerprint"] = "0" * 16
    (base_dir / "result.json").write_text(json.dumps(doc))
    other, _, _ = execute_run(small(tmp_path, run_id="other", data={"num_streams": 2}, baseline=base_dir))
    assert other.normalisation is not None and other.normalisation.speedup is None
    assert "fingerprints differ" in (other.normalisation.reason or "")


@pytest.mark.processes
def test_paced_run_end_to_end(tmp_path: Path) -> None:
    no_audit = {"audit": {"share": 0, "minimum": 0}}  # a paced stream plays in real time: one is enough
    config = small(
        tmp_path,
        data={"num_streams": 1, "duration_s": 2.0},
        engine={"warmup_frames": 20, "pacing": "paced"},
        protocol=no_audit,
    )
    result, recordings, _ = execute_run(config)
    assert recordings[0].paced_start_ns is not None and result.metrics.overall.speed.replay.measured
    assert "frame_paced" in result.metrics.overall.accuracy.curves
    # no GPU here: W at RTF = 1 is null with the reason, never an estimate
    assert result.resources.power_at_rtf1_w is None and result.resources.power_at_rtf1_reason
    unpaced, _, _ = execute_run(
        small(tmp_path, run_id="u", data={"num_streams": 1, "duration_s": 2.0}, protocol=no_audit)
    )
    assert "paced run" in (unpaced.resources.power_at_rtf1_reason or "")
