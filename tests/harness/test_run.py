"""End to end: the runner, the result files, the CLI, and the README's adapter example."""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.results.files import ResultFileError, RunResult, load_recordings, load_result
from streambench.harness.runs.session import execute_run
from streambench.protocols import online
from tests.support import run_streambench

README = Path(__file__).resolve().parents[2] / "README.md"


def small(tmp_path: Path, **changes: object) -> RunConfig:
    base: dict[str, object] = {"data": {"num_streams": 6, "seed": 0}, "output_dir": tmp_path, "run_id": "run"}
    base.update(changes)
    return RunConfig.model_validate(base)


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


def test_lookahead_model_f1_rises_with_delta(tmp_path: Path) -> None:
    result, _, _ = execute_run(small(tmp_path, adapter="reference-lookahead"))
    curve = [p.f1_micro for p in result.metrics.overall.accuracy.curves["frame"]["strict"]]
    assert result.metrics.f1_at(0) < result.metrics.f1_at(500)
    assert curve[0] == 0.0  # every label comes 5 frames = 200 ms late
    assert curve[-1] > 0.5


def test_null_adapter_is_scored_as_predicting_background_rarely(tmp_path: Path) -> None:
    result, _, _ = execute_run(small(tmp_path, adapter="null", engine={"warmup_frames": 0}))
    assert result.warmup is None
    # uniform scores over 29 classes are all below 0.5: nothing is ever predicted
    assert result.metrics.f1_at(1000) == 0.0


def test_per_class_rule_splits_streams(tmp_path: Path) -> None:
    result, recordings, _ = execute_run(
        small(tmp_path, protocol={"decision": {"kind": "per_class", "validation_fraction": 0.34}})
    )
    assert len(result.streams["validation"]) == 2 and len(result.streams["test"]) == 4
    assert result.metrics.decision.fitted_on == result.streams["validation"]
    assert [r.role for r in recordings].count("validation") == 2


def test_unknown_adapter_and_bad_config_fail_clearly(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["run", "--adapter", "refernce", "--output-dir", str(tmp_path), "--no-progress"])
    assert res.exit_code == 2 and "Did you mean 'reference'" in res.output
    res = runner.invoke(app, ["run", "--streams", "0", "--output-dir", str(tmp_path), "--no-progress"])
    assert res.exit_code == 2 and "num_streams" in res.output
    res = runner.invoke(app, ["run", "-o", "smoothing", "--no-progress"])
    assert res.exit_code == 2 and "expected KEY=VALUE" in res.output


def test_cli_run_prints_the_summary_and_score_reproduces_it(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(
        app, ["run", "--streams", "3", "--output-dir", str(tmp_path), "--run-id", "cli", "--no-progress"]
    )
    assert res.exit_code == 0, res.output
    assert "F1 Early-ok" in res.output and "p95" in res.output and "RTF" in res.output
    result = load_result(tmp_path / "cli")
    f1_500 = result.metrics.f1_at(500)
    row = re.search(r"│\s+500 │\s+([\d.]+) │.*", res.output)
    assert row is not None and float(row.group(1)) == pytest.approx(100 * f1_500, abs=0.051)
    rescored = runner.invoke(app, ["score", "online", str(tmp_path / "cli")])
    assert rescored.exit_code == 0, rescored.output
    assert re.search(r"│\s+500 │.*", rescored.output).group(0) == row.group(0)  # type: ignore[union-attr]
    listed = runner.invoke(app, ["adapters"])
    assert "reference-lookahead" in listed.output and "streambench.adapters.null:NullAdapter" in listed.output


def test_result_json_validates_against_the_published_json_schema(tmp_path: Path) -> None:
    execute_run(small(tmp_path, data={"num_streams": 2}))
    printed = CliRunner().invoke(app, ["schema"])
    assert printed.exit_code == 0
    schema = json.loads(printed.output)
    document = json.loads((tmp_path / "run" / "result.json").read_text())
    jsonschema.validate(document, schema)
    document["metrics"]["overall"]["speed"]["latency"]["p95_ms"] = "fast"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, schema)


def test_corrupt_arrays_file_is_named(tmp_path: Path) -> None:
    execute_run(small(tmp_path, data={"num_streams": 2}))
    (tmp_path / "run" / "arrays.npz").write_bytes(b"not a zip")
    with pytest.raises(ResultFileError, match=r"arrays\.npz: not a readable arrays file"):
        load_recordings(tmp_path / "run")
    res = CliRunner().invoke(app, ["score", "online", str(tmp_path / "run")])
    assert res.exit_code == 2 and "not a readable arrays file" in res.output


def test_result_files_are_checked_on_load(tmp_path: Path) -> None:
    (tmp_path / "result.json").write_text('{"schema_version": 99}')
    with pytest.raises(ResultFileError, match="schema_version 99 is not supported"):
        load_result(tmp_path)
    (tmp_path / "result.json").write_text('{"schema_version": 1,\n "run_id": ')
    with pytest.raises(ResultFileError, match="line 2: not valid JSON"):
        load_result(tmp_path / "result.json")
    (tmp_path / "result.json").write_text('{"schema_version": 3}')
    with pytest.raises(ResultFileError, match="does not match the result schema"):
        load_result(tmp_path)


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


def test_result_files_are_readable_by_other_users_as_open_would_make_them(tmp_path: Path) -> None:
    """Issue 17: the atomic writer's temporary file is 0600; the result must get the umask's mode, so a
    CI artifact uploader running as another user can read it."""
    import stat

    from streambench.harness.io.atomic import atomic_write_text

    old = os.umask(0o022)
    try:
        path = atomic_write_text(tmp_path / "result.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_protocol_refuses_to_join_a_run_of_another_adapter_or_data(tmp_path: Path) -> None:
    """Issue 17: the report's hint `--protocol robustness --run-id <run>` with another adapter would
    show a reference robustness run as the GRU's. The same adapter and data may join."""
    from typer.testing import CliRunner

    from streambench.harness.cli import app

    base = ["--streams", "2", "--duration", "5", "--warmup-frames", "0", "--output-dir", str(tmp_path)]
    base += ["--run-id", "r", "--no-progress", "--no-report"]
    assert CliRunner().invoke(app, ["run", *base, "--adapter", "null"]).exit_code == 0
    other = CliRunner().invoke(app, ["run", *base, "--protocol", "robustness"])
    assert other.exit_code == 2 and "another adapter" in other.output
    assert not (tmp_path / "r" / "robustness.json").exists()
    seed = CliRunner().invoke(
        app, ["run", *base, "--adapter", "null", "--protocol", "robustness", "--seed", "3"]
    )
    assert seed.exit_code == 2 and "data set" in seed.output


def test_run_and_adapters_speak_json(tmp_path: Path) -> None:
    """Issue 17: --json for run (its directory, exit code and headline, nothing else on stdout) and for
    adapters (the registry, or one adapter's options)."""
    from typer.testing import CliRunner

    from streambench.harness.cli import app

    args = ["run", "--streams", "2", "--duration", "5", "--warmup-frames", "0", "--output-dir", str(tmp_path)]
    done = CliRunner().invoke(app, [*args, "--run-id", "j", "--no-progress", "--json"])
    assert done.exit_code == 0, done.output
    document = json.loads(done.stdout)
    assert document["exit_code"] == 0 and Path(document["run_dir"]).name == "j"
    assert document["headline"]["figures"][0]["key"] == "f1@0ms"
    assert (tmp_path / "j" / "report.html").is_file()
    registry = json.loads(CliRunner().invoke(app, ["adapters", "--json"]).stdout)
    assert registry["reference"].endswith(":CausalReferenceAdapter")
    options = json.loads(CliRunner().invoke(app, ["adapters", "null", "--json"]).stdout)
    assert [o["option"] for o in options["options"]] == ["classes"]
