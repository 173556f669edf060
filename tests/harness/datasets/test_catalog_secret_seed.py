"""Issue 24, item 3: the generated data sets' scored streams come from a secret seed drawn per run (in the
harness's process, written to the result only after scoring), a seed that was given is marked ``public
seed``, a resume and ``--seed`` rebuild the same streams, and a model that carries its own copy of the
public seed-0 set gains nothing by it in the default flow (``offender-rebuilder``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from markupsafe import escape
from typer.testing import CliRunner

from streambench.adapters.offenders.rebuilder import frame_fingerprint
from streambench.harness.cli import app
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.event_log import read_events
from streambench.harness.results.files import RESULT_FILE, RunResult, load_recordings, load_result
from streambench.harness.runs.session import execute_run

SMALL: dict[str, Any] = {"num_streams": 4, "duration_s": 2.0}


def config(output_dir: Path, run_id: str, seed: int | None = None, **changes: Any) -> RunConfig:
    tree: dict[str, Any] = {
        "data": {**SMALL, "seed": seed},
        "engine": {"warmup_frames": 10},
        "protocol": {"bootstrap_resamples": 50},
        "output_dir": output_dir,
        "run_id": run_id,
    }
    return RunConfig.model_validate({**tree, **changes})


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs of the reference model without a seed, and ``again``: the first one's seed, given on the
    command line once its result was written."""
    results = tmp_path_factory.mktemp("secret") / "results"
    first = execute_run(config(results, "first"))[0]
    execute_run(config(results, "second"))
    code, output = invoke(
        "run", "--streams", "4", "--duration", "2", "--warmup-frames", "10",
        "--seed", str(first.seeds.dataset),
        "--run-id", "again", "--output-dir", str(results), "--no-progress", "--no-report",
    )  # fmt: skip
    assert code == 0, output
    return results


@pytest.mark.processes
def test_runs_without_a_seed_draw_different_secret_ones(store: Path) -> None:
    first, second = load_result(store / "first"), load_result(store / "second")
    for result in (first, second):
        seed = result.seeds.dataset
        assert isinstance(seed, int) and seed >= 0 and result.seeds.dataset_seed_kind == "secret"
        assert result.dataset_config["seed"] == seed  # written with the result, after scoring
        assert result.environment.seeds.value == {"dataset": seed, "torch": 0, "split": 0}
        start = read_events(store / result.run_id).start  # what a resume reads back
        assert start.config["data"]["seed"] == seed and start.dataset_seed_kind == "secret"
    assert first.seeds.dataset != second.seeds.dataset
    assert first.environment.data_hash.value != second.environment.data_hash.value
    raw = json.loads((store / "first" / RESULT_FILE).read_text())
    assert raw["seeds"]["dataset_seed_kind"] == "secret"


@pytest.mark.processes
def test_the_recorded_seed_rebuilds_the_streams_and_is_then_public(store: Path) -> None:
    first, again = load_result(store / "first"), load_result(store / "again")
    assert again.seeds.dataset == first.seeds.dataset and again.seeds.dataset_seed_kind == "public"
    assert again.environment.data_hash.value == first.environment.data_hash.value
    assert again.metrics.f1_at(100) == first.metrics.f1_at(100)
    for a, b in zip(load_recordings(store / "first"), load_recordings(store / "again"), strict=True):
        np.testing.assert_array_equal(a.labels, b.labels)
        np.testing.assert_array_equal(a.scores, b.scores)

    code, output = invoke("show", "again", "--results-dir", str(store))
    assert code == 0 and f"public seed {first.seeds.dataset}" in output
    code, output = invoke("show", "first", "--results-dir", str(store))
    assert code == 0 and "public seed" not in output
    code, output = invoke("show", "again", "--results-dir", str(store), "--markdown")
    assert code == 0 and f"public seed {first.seeds.dataset}" in output
    code, output = invoke("show", "again", "--results-dir", str(store), "--json")
    assert json.loads(output)["data"]["seed_kind"] == "public"

    from streambench.harness.runs.catalog import write_report

    page = write_report([str(store / "again")], store / "again.html", store).read_text()
    assert "public seed</span> " + str(first.seeds.dataset) in page
    page = write_report([str(store / "first")], store / "first.html", store).read_text()
    assert "(secret: drawn for this run, written here after scoring)" in page


def test_a_seed_in_a_configuration_file_is_public(tmp_path: Path) -> None:
    from streambench.harness.cli.config import RunOptions, build_run_config
    from streambench.harness.datasets.catalog import seeded

    path = tmp_path / "run.toml"
    path.write_text("[data]\nseed = 5\nnum_streams = 2\n")
    filed = build_run_config(RunOptions(), set(), path)
    assert seeded(filed.data)[1] == "public" and getattr(filed.data, "seed") == 5  # noqa: B009
    unset = build_run_config(RunOptions(), set())
    assert getattr(unset.data, "seed") is None and seeded(unset.data)[1] == "secret"  # noqa: B009


def test_compare_notes_two_draws_and_a_redraw_with_the_seed_is_the_same_data(store: Path) -> None:
    code, output = invoke("compare", "first", "second", "--results-dir", str(store), "--json")
    assert code == 0, output
    assert "different draws of the synthetic set (secret seeds)" in json.loads(output)["data_note"]
    code, output = invoke("compare", "first", "again", "--results-dir", str(store), "--json")
    assert code == 0 and json.loads(output)["data_note"] is None
    code, output = invoke("compare", "first", "again", "--results-dir", str(store))
    assert "again: public seed" in " ".join(output.split())

    from streambench.harness.runs.catalog import write_report

    runs = [str(store / "first"), str(store / "second"), str(store / "again")]
    page = write_report(runs, store / "three.html", store).read_text()
    assert escape("another draw than #1's (secret seeds)") in page
    assert "differs from #1" not in page  # "again" is #1's streams: "same as #1"


def test_an_older_result_without_seed_kinds_reads_as_public(store: Path, tmp_path: Path) -> None:
    raw = json.loads((store / "first" / RESULT_FILE).read_text())
    del raw["seeds"]["dataset_seed_kind"]
    raw["seeds"]["dataset"] = 0
    assert RunResult.model_validate(raw).seeds.dataset_seed_kind == "public"
    raw["seeds"]["dataset"] = None  # data read from files
    assert RunResult.model_validate(raw).seeds.dataset_seed_kind is None


@pytest.mark.processes
def test_the_other_protocols_draw_their_own_and_a_joined_run_keeps_its_seed(store: Path) -> None:
    from streambench.harness.runs.catalog import check_joinable
    from streambench.harness.runs.detection import execute_detection, with_defaults
    from streambench.harness.runs.robustness import RESULT_FILE as ROBUSTNESS_FILE
    from streambench.harness.runs.robustness import RobustnessResult, execute_robustness
    from streambench.protocols.detection import DetectionConfig
    from streambench.protocols.robustness import RobustnessConfig

    first = load_result(store / "first")
    joined = config(store, "first", isolate=False)  # a robustness result joins the online run "first"
    check_joinable(joined)  # an unset seed joins the run's secret one: the same data set
    sweep = RobustnessConfig(missing_rates_pct=[50.0], audio_delays_ms=[], jitters_ms=[])
    robust, _ = execute_robustness(joined, sweep)
    assert robust.run.data.seed == first.seeds.dataset and robust.dataset_seed_kind == "secret"  # type: ignore[union-attr]
    assert robust.environment is not None
    assert robust.environment.data_hash.value == first.environment.data_hash.value
    raw = json.loads((store / "first" / ROBUSTNESS_FILE).read_text())
    del raw["dataset_seed_kind"]  # as an older file: its seed was given
    assert RobustnessResult.model_validate(raw).dataset_seed_kind == "public"

    unset = RunConfig.model_validate({"data": {**SMALL}, "output_dir": store, "isolate": False})
    spoof = with_defaults(unset)
    one, _ = execute_detection(spoof, DetectionConfig())
    two, _ = execute_detection(spoof, DetectionConfig())
    seeds = [r.run.data.seed for r in (one, two)]  # type: ignore[union-attr]
    assert all(isinstance(s, int) for s in seeds) and seeds[0] != seeds[1]
    assert one.dataset_seed_kind == two.dataset_seed_kind == "secret"


def rebuilt_table() -> dict[str, int]:
    """What a cheat's author builds with the harness's own generator and the old default seed 0: every
    scored frame's fingerprint and its class."""
    table = {}
    for stream in make_streams(SyntheticConfig(seed=0, **SMALL)):
        for frame in stream.frames():
            table[frame_fingerprint(frame.inputs)] = int(np.argmax(stream.labels[frame.index]))
    return table


@pytest.mark.slow
def test_a_model_that_rebuilt_the_seed_0_set_gains_nothing_by_default(tmp_path: Path) -> None:
    known = {"known": rebuilt_table()}
    cheat: dict[str, Any] = {"adapter": "offender-rebuilder", "adapter_options": known}
    honest: dict[str, Any] = {"adapter": "offender-rebuilder"}  # no table: the offenders' honest model
    # with the public seed it rebuilt, it is perfect where the honest model scores nothing
    public_cheat = execute_run(config(tmp_path, "cheat0", seed=0, **cheat))[0]
    public_honest = execute_run(config(tmp_path, "honest0", seed=0, **honest))[0]
    assert public_cheat.metrics.f1_at(100) == pytest.approx(1.0)
    assert public_cheat.metrics.f1_at(100) - public_honest.metrics.f1_at(100) > 0.5
    # by default (a secret seed) no frame is found: it answers exactly as the honest model does
    secret_cheat = execute_run(config(tmp_path, "cheat", **cheat))[0]
    assert secret_cheat.seeds.dataset_seed_kind == "secret"
    same_data = execute_run(config(tmp_path, "honest", seed=secret_cheat.seeds.dataset, **honest))[0]
    assert secret_cheat.metrics.f1_at(100) == same_data.metrics.f1_at(100)
    assert secret_cheat.metrics.overall.accuracy == same_data.metrics.overall.accuracy
    for a, b in zip(load_recordings(tmp_path / "cheat"), load_recordings(tmp_path / "honest"), strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)
