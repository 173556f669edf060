"""``streambench ab`` (harness/cli/ab.py, harness/runs/ab.py, harness/execution/rounds.py): the CLI
tests check the shape of a job (mode, pairs, workers, looks, which clock), never its timings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app

SMALL = ["--base-adapter", "null", "--streams", "2", "--duration", "5", "--warmup-frames", "10",
         "--streams-per-round", "1", "--budget-s", "0", "--no-progress"]  # fmt: skip


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["ab", *SMALL, *args], env={"COLUMNS": "200"})
    return result.exit_code, result.output


@pytest.mark.processes
def test_interleaved_job_in_one_pair_of_workers() -> None:
    code, output = invoke("--mode", "interleaved", "--rounds", "6", "--restart-every", "0", "--json")
    assert code in (0, 1, 3), output
    report = json.loads(output)
    assert report["exit_code"] == code
    assert report["mode"] == "interleaved" and report["mode_reason"] == "asked for"
    assert report["pairs"] == 6 and report["workers"] == 1 and report["looks"] == 1
    assert all(o in ("base then head", "head then base") for o in report["orders"])
    assert [s["label"] for s in report["sides"]] == ["base", "head"]
    assert all(s["quality"]["verdict"] in ("VALID", "INVALID") for s in report["sides"])
    assert {e["key"] for e in report["gate"]["effects"]} == {"p50", "p95", "p99", "mean"}
    assert report["on"] == "both" and report["cpu_clock"] == "thread"
    assert report["gate"]["clock"] == "both" and report["gate_cpu"]["clock"] == "cpu"
    assert report["stop"] == "one look" and report["look_at"] == [6] and report["budget_s"] is None
    assert report["data_seed_kind"] == "secret" and isinstance(report["data_seed"], int)  # no --seed


@pytest.mark.processes
def test_duet_sequential_on_cpu_time_with_fresh_workers() -> None:
    code, output = invoke(
        "--mode", "duet", "--rounds", "6", "--max-rounds", "8", "--step", "2", "--restart-every", "4",
        "--on", "cpu", "--fail-on", "p50:+50%", "--pass-confidence", "0.99", "--json",
    )  # fmt: skip
    assert code in (0, 1, 3), output
    report = json.loads(output)
    assert report["mode"] == "duet" and all("@cpu" in o for o in report["orders"])
    assert report["on"] == "cpu" and report["cpu_clock"] == "thread"
    assert report["pairs"] in (6, 8) and report["planned_looks"] == 2
    assert report["workers"] == (2 if report["pairs"] > 4 else 1)
    assert report["confidence_per_look"] == pytest.approx(0.975)
    assert report["pass_confidence_per_look"] == report["gate"]["pass_confidence"] == pytest.approx(0.995)


@pytest.mark.processes
def test_markdown_and_bad_input() -> None:
    code, output = invoke("--rounds", "2", "--restart-every", "0", "--markdown")
    assert code == 3, output  # two pairs are too few for any interval
    assert "streambench ab: **inconclusive**" in output and "too few rounds" in output
    code, output = invoke("--on", "gpu")
    assert code == 2 and "expected both, wall or cpu" in output
    code, output = invoke("--fail-on", "f1@100ms:-0.01")
    assert code == 2 and "ab judges p50" in output
    code, output = invoke("--rounds", "8", "--max-rounds", "4")
    assert code == 2 and "max_rounds" in output
    # refused before any worker starts (a falling latency is no regression; a level must be in (0, 1))
    code, output = invoke("--fail-on", "p50:-5%")
    assert code == 2 and "rising is bad: write p50:+5%" in output
    code, output = invoke("--pass-confidence", "0")
    assert code == 2 and "pass_confidence must be in (0, 1)" in output


CONFIGURED = ["--rounds", "2", "--streams-per-round", "1", "--restart-every", "0", "--budget-s", "0",
              "--no-progress", "--json"]  # fmt: skip


def run_ab_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["ab", *args], env={"COLUMNS": "200"})
    return result.exit_code, result.output


@pytest.mark.processes
def test_config_file_gives_both_sides_its_data_engine_and_adapter(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        'adapter = "null"\noutput_dir = "elsewhere"\n[data]\nnum_streams = 2\nduration_s = 3.0\n'
        "[engine]\nwarmup_frames = 10\n"
    )
    code, output = run_ab_cli("--config", str(config), *CONFIGURED)
    assert code == 3, output  # two pairs: too few for an interval
    report = json.loads(output[output.index("{") :])
    assert [s["adapter"] for s in report["sides"]] == ["null", "null"]
    assert [s["frames"] for s in report["sides"]] == [2 * 75, 2 * 75]  # 2 rounds of one 3 s stream at 25 fps
    assert "ab does not use output_dir" in output
    # a typed option overrides the file (the synthetic data set's duration here)
    code, output = run_ab_cli("--config", str(config), "--duration", "2", *CONFIGURED)
    assert [s["frames"] for s in json.loads(output[output.index("{") :])["sides"]] == [100, 100]


@pytest.mark.processes
def test_config_file_with_audio_files_data(tmp_path: Path) -> None:
    soundfile = pytest.importorskip("soundfile")
    for k in range(2):  # 1 s of audio each, 10 frames of 1600 samples
        silence = np.zeros(16000, dtype=np.float32)
        soundfile.write(str(tmp_path / f"a{k}.wav"), silence, 16000, subtype="FLOAT")
        (tmp_path / f"a{k}.txt").write_text("0.2\t0.5\tspeech\n")
    config = tmp_path / "files.json"
    data = {"kind": "audio_files", "directory": str(tmp_path), "frame_samples": 1600}
    config.write_text(json.dumps({"data": data}))
    code, output = run_ab_cli(
        "--config", str(config), "--base-adapter", "tests.support:UnseededNoiseAdapter",
        "--warmup-frames", "5", *CONFIGURED,
    )  # fmt: skip
    assert code == 3, output
    assert [s["frames"] for s in json.loads(output[output.index("{") :])["sides"]] == [20, 20]
    code, output = run_ab_cli("--config", str(config), "--streams", "4", *CONFIGURED)
    assert code == 2 and "--streams apply to the synthetic data set, not to the file's audio_files" in output
    config.write_text(json.dumps({"data": {"kind": "audio_files", "frame_samples": 1600}}))
    code, output = run_ab_cli("--config", str(config), *CONFIGURED)
    assert code == 2 and str(config) in output and "directory" in output  # the file and the field named


class _Stop(Exception):
    pass


@pytest.mark.parametrize(("typed", "kind"), [((), "secret"), (("--seed", "3"), "public")])
def test_both_sides_get_one_seed_drawn_in_the_parent(
    monkeypatch: pytest.MonkeyPatch, typed: tuple[str, ...], kind: str
) -> None:
    """Issue 24: without --seed, one secret seed is drawn per job and given to both sides (the gate
    compares the same streams); a new job draws a new one; --seed is used as given (public)."""
    import streambench.harness.runs.ab

    seen: list[tuple[object, object]] = []

    def rounds(base: object, head: object, *args: object, **kwargs: object) -> None:
        seen.append((base.run.data, head.run.data))  # type: ignore[attr-defined]
        raise _Stop

    monkeypatch.setattr(streambench.harness.runs.ab, "run_rounds", rounds)
    for _ in range(2):
        with pytest.raises(_Stop):
            CliRunner().invoke(app, ["ab", *SMALL, *typed], catch_exceptions=False)
    (base, head), (again, _) = seen
    assert base == head and base.seed is not None  # type: ignore[attr-defined]
    assert (base.seed != again.seed) == (kind == "secret")  # type: ignore[attr-defined]
    if kind == "public":
        assert base.seed == 3  # type: ignore[attr-defined]
