"""The hysteresis run (harness/runs/hysteresis.py): the reference router shows seed 001's expected shapes
(lag growing with the length of B; return-gap ≈ 0 for hard labels), the scores fallback, the result
file, the protocol configuration file and the printed tables."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from streambench.harness.execution.config import RunConfig
from streambench.harness.runs.hysteresis import (
    RESULT_FILE,
    HysteresisResult,
    cli_run,
    execute_hysteresis,
    print_result,
)
from streambench.protocols.hysteresis import HysteresisConfig, Row

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "hysteresis"


def run_config(tmp_path: Path, **options: Any) -> RunConfig:
    return RunConfig.model_validate(
        {
            "adapter": "reference-router",
            "adapter_options": options,
            "engine": {"warmup_frames": 20},
            "output_dir": str(tmp_path),
        }
    )


def rows(result: HysteresisResult, experiment: str) -> list[Row]:
    return [r for r in result.report.rows if r.experiment == experiment]


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> tuple[HysteresisResult, Path]:
    sweep = HysteresisConfig(repeats=2)
    return execute_hysteresis(run_config(tmp_path_factory.mktemp("hyst")), sweep)


@pytest.mark.processes
def test_lag_grows_with_the_length_of_b(full: tuple[HysteresisResult, Path]) -> None:
    a = rows(full[0], "b_length")
    assert [r.setting for r in a] == ["4", "8", "16", "32", "64"]
    lags = [r.lag_ba for r in a]
    assert all(lag is not None for lag in lags) and all(r.lag_ba_undefined == 0 for r in a)
    assert lags == sorted(lags)  # type: ignore[type-var]
    assert lags[0] == 0.0 and lags[-1] is not None and lags[-1] >= 10  # a short B is not even noticed
    assert a[0].lag_ab is None and a[0].lag_ab_undefined == 2  # 4 frames of B: no stable switch
    assert a[-1].lag_ab is not None and a[-1].lag_ab > 0
    assert a[-1].gap_cosine > 0.1 > a[0].gap_cosine and a[-1].loop_area > 10 * a[0].loop_area


@pytest.mark.processes
def test_return_gap_is_zero_for_the_hard_label(full: tuple[HysteresisResult, Path]) -> None:
    d = {r.arm: r for r in rows(full[0], "hard_label")}
    assert d["hard"].gap_cosine < 0.01 and d["hard"].loop_area < 0.5
    assert d["soft"].gap_cosine > 0.05 and d["soft"].loop_area > 5
    assert d["hard"].lag_ab == 0.0 and d["hard"].lag_ba == 0.0
    # the argmax of the stateful weights keeps the state's memory: one-hot, but late
    assert d["hard_state"].gap_cosine > 0.05 and d["hard_state"].lag_ba is not None
    assert d["hard_state"].lag_ba > 0


def test_mix_and_aggregation_rows(full: tuple[HysteresisResult, Path]) -> None:
    b = {r.setting: r for r in rows(full[0], "mix")}
    assert list(b) == ["0.2/0.8", "0.5/0.5", "0.8/0.2"]
    assert all(r.mix_entropy is not None and 0 < r.mix_entropy < 0.7 for r in b.values())
    assert b["0.2/0.8"].loop_area > b["0.5/0.5"].loop_area > b["0.8/0.2"].loop_area
    c = {r.setting: r for r in rows(full[0], "aggregation")}
    assert list(c) == ["none", "mean", "tail_exp"]
    none, mean, tail = c["none"], c["mean"], c["tail_exp"]
    assert none.lag_ba is not None and mean.lag_ba is not None and tail.lag_ba is not None
    assert none.lag_ba < tail.lag_ba < mean.lag_ba  # pooling over 8 frames adds delay, the tail less
    assert none.mix_entropy is not None and none.lag_ba == rows(full[0], "b_length")[3].lag_ba


def test_result_file_and_printed_tables(full: tuple[HysteresisResult, Path]) -> None:
    result, run_dir = full
    raw = json.loads((run_dir / RESULT_FILE).read_text())
    assert raw["schema_version"] == 1 and raw["adapter"] == "reference-router"
    assert HysteresisResult.model_validate(raw).report == result.report
    buffer = io.StringIO()
    assert print_result(Console(file=buffer, width=200), result) == 0
    text = buffer.getvalue()
    for title in ("A. hysteresis against the length of B", "B. memory of the mix", "C. weight aggregation"):
        assert title in text
    assert "D. hard label against soft gating" in text and "hard_state" in text


@pytest.mark.processes
def test_scores_are_used_when_the_adapter_gives_no_weights(tmp_path: Path) -> None:
    sweep = HysteresisConfig(experiments=("b_length",), b_lengths=(4, 32), repeats=1)
    with_w, _ = execute_hysteresis(run_config(tmp_path), sweep)
    without, _ = execute_hysteresis(run_config(tmp_path, emit_weights=False), sweep)
    assert with_w.report.weights_source == "weights" and without.report.weights_source == "scores"
    assert without.adapter_info.capabilities == frozenset()
    for a, b in zip(with_w.report.rows, without.report.rows, strict=True):
        assert a.lag_ba == b.lag_ba and a.lag_ab == b.lag_ab
        assert a.gap_cosine == pytest.approx(b.gap_cosine, abs=1e-6)


@pytest.mark.processes
def test_cli_run_reads_the_protocol_file_and_defaults_to_the_router(tmp_path: Path) -> None:
    config = RunConfig.model_validate({"engine": {"warmup_frames": 0}, "output_dir": str(tmp_path)})
    assert config.adapter == "reference"
    good = tmp_path / "h.toml"
    good.write_text('experiments = ["hard_label"]\nhard_arms = ["hard"]\nrepeats = 1\nlen_b = 8\n')
    result, run_dir = cli_run(config, good)
    assert result.adapter == "reference-router" and run_dir.parent == tmp_path
    assert [(r.experiment, r.arm) for r in result.report.rows] == [("hard_label", "hard")]
    bad = tmp_path / "bad.toml"
    bad.write_text("k = 0\n")
    with pytest.raises(ValueError, match=r"bad\.toml: invalid hysteresis configuration") as info:
        cli_run(config, bad)
    assert "k" in str(info.value)
    paced = config.model_copy(update={"engine": config.engine.model_copy(update={"pacing": "paced"})})
    with pytest.raises(ValueError, match="needs --pacing unpaced"):
        cli_run(paced, None)


@pytest.mark.parametrize("name", ["b_length", "mix", "aggregation", "hard_label"])
def test_example_configurations_are_valid(name: str) -> None:
    from streambench.harness.runs.hysteresis import load_protocol_config

    config = load_protocol_config(EXAMPLES / f"{name}.toml")
    assert config.experiments == (name,)


def test_cli_refuses_options_the_protocol_would_ignore() -> None:
    from typer.testing import CliRunner

    from streambench.harness.cli import app

    res = CliRunner().invoke(app, ["run", "--protocol", "hysteresis", "--streams", "3", "--no-progress"])
    assert res.exit_code == 2 and "builds its own streams" in res.output and "--streams" in res.output
