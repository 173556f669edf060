"""Issue 24 item 5, "Nothing is dropped from scoring": a model cannot abstain by failing.

The planted :class:`~streambench.adapters.offenders.abstainer.AbstainerAdapter` raises on the streams whose
first frame tells it that it would get them wrong. Left out of the figures, those streams would lift its F1
above the same model's honest F1; scored as answered wrongly (every class flipped, every frame), they
gain it nothing. Every failed stream is listed with its error, saved with its labels so a re-score
counts it the same way, and replayed by the causality protocol's ``scored_replay`` audit like any
other stream.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from streambench.adapters.contract import Frame, Stream
from streambench.adapters.offenders import frame_feature
from streambench.adapters.offenders.abstainer import AbstainerAdapter, AbstainerOptions
from streambench.adapters.registry import resolve
from streambench.harness.cli import app
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.execution.executor import EngineExecutor, InProcess, failed_streams
from streambench.harness.results.files import ResultFileError, load_failed_streams, load_result
from streambench.harness.runs.causality.protocol import execute_causality
from streambench.harness.runs.session import execute_run
from streambench.protocols import online
from streambench.protocols.causality import CausalityConfig
from streambench.protocols.online import OnlineConfig
from streambench.protocols.recording import FailedStream, failed_to_arrays

CLASSES = ("background", "event")
CONFIG = OnlineConfig(bootstrap_resamples=20)


def stream(stream_id: str, values: list[float], event: list[bool]) -> Stream:
    """10 frames/s; frame i carries ``values[i]`` (its feature), labelled event or background."""
    n = len(values)
    labels = np.zeros((n, 2), dtype=bool)
    labels[np.arange(n), np.asarray(event, dtype=int)] = True
    times = (np.arange(n) + 1) / 10

    def frames() -> list[Frame]:
        return [
            Frame(index=i, t=float(times[i]), inputs={"x": np.array([values[i]], dtype=np.float32)})
            for i in range(n)
        ]

    return Stream(stream_id, CLASSES, labels, times, frames, ("x",), segment_length_s=0.5)


def data() -> list[Stream]:
    """Two easy streams (the feature follows the label: right on every frame) and two hard ones (an
    event the model never sees: right on the 5 background frames, wrong on the 5 event frames). A hard
    stream starts far lower (-3) than an easy one (-1): the abstainer's cheap tell."""
    bg_then_event = [False] * 5 + [True] * 5
    easy = [-1.0] * 5 + [1.0] * 5
    return [
        stream("easy-0", easy, bg_then_event),
        stream("hard-0", [-3.0] * 10, bg_then_event),
        stream("easy-1", easy, bg_then_event),
        stream("hard-1", [-3.0] * 10, bg_then_event),
    ]


def scored(abstain_below: float | None, drop_failures: bool = False) -> tuple[online.OnlineScore, list[Any]]:
    streams = data()
    adapter = AbstainerAdapter(AbstainerOptions(abstain_below=abstain_below))
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    executor = EngineExecutor(InProcess(engine, {s.stream_id: s for s in streams}, None))
    recordings = executor.execute(online.plan(CONFIG, [s.stream_id for s in streams]))
    failed = [] if drop_failures else failed_streams(executor.failures, streams)
    return online.score(recordings, CONFIG, CLASSES, failed), executor.failures


def test_the_abstainer_gains_nothing_from_failing() -> None:
    """F1 of the positive class "event" (the binary default, issue 27). Honest: TP 10 (the easy streams'
    event frames), FP 0, FN 10 (the hard ones'), F1 = 20 / 30. The abstainer fails both hard streams:
    dropped they would give F1 = 1.0; as the complement of their labels (event on their 5 background
    frames, not on their 5 event frames: FP 5, FN 5 each) F1 = 20 / 40 = 0.5, below the honest 2/3.
    Over both classes (the figure before issue 27) honest 0.75 (TP 30, FP 10, FN 10), abstaining 0.5."""
    honest, none_failed = scored(None)
    assert none_failed == [] and honest.f1_at(0) == pytest.approx(2 / 3, abs=1e-8)
    assert honest.overall.accuracy.curves["frame"]["strict"][0].f1_micro_all_classes == pytest.approx(0.75)
    abstainer, failures = scored(-2.0)
    assert [(f.stream_id, f.frame) for f in failures] == [("hard-0", 0), ("hard-1", 0)]
    assert all("abstaining: the first frame's feature -3" in f.message for f in failures)
    assert [f.stream_id for f in abstainer.failed] == ["hard-0", "hard-1"]
    assert all(f.error.startswith("AdapterCallError: ") and "abstaining" in f.error for f in abstainer.failed)
    assert abstainer.f1_at(0) == pytest.approx(0.5, abs=1e-8)
    for delta in CONFIG.deltas_ms:
        for mode in ("strict", "early_ok"):
            assert abstainer.f1_at(delta, mode) <= honest.f1_at(delta, mode)
    assert abstainer.overall.accuracy.frame_accuracy <= honest.overall.accuracy.frame_accuracy
    # the old rule (failed streams left out) is what the abstainer plays for: it would win
    dropped, _ = scored(-2.0, drop_failures=True)
    assert dropped.f1_at(0) == pytest.approx(1.0, abs=1e-8)
    assert dropped.f1_at(0) > honest.f1_at(0)


def test_the_abstainer_is_registered() -> None:
    assert resolve("offender-abstainer") is AbstainerAdapter


def config(tmp_path: Path, run_id: str, adapter: str, **options: Any) -> RunConfig:
    return RunConfig.model_validate(
        {
            "adapter": adapter,
            "adapter_options": options,
            "data": {"seed": 0, "num_streams": 6, "duration_s": 2.0},
            "engine": {"warmup_frames": 0},
            "protocol": {"bootstrap_resamples": 20},
            "output_dir": tmp_path,
            "run_id": run_id,
        }
    )


@pytest.mark.processes
def test_a_run_lists_scores_saves_and_rescores_its_failed_streams(tmp_path: Path) -> None:
    """On the synthetic data the abstainer fails the streams starting below the median first frame: its
    F1 is at most the honest run's, result.json lists and counts the failures, arrays.npz keeps their
    labels, and `streambench score online` re-scores them the same way."""
    streams = make_streams(SyntheticConfig(seed=0, num_streams=6, duration_s=2.0))
    first = {s.stream_id: frame_feature(next(iter(s.frames())).inputs) for s in streams}
    below = float(np.median(list(first.values())))
    expected = sorted(k for k, v in first.items() if v < below)
    honest, _, _ = execute_run(config(tmp_path, "honest", "offender-abstainer"))
    result, _, run_dir = execute_run(config(tmp_path, "abstainer", "offender-abstainer", abstain_below=below))
    assert sorted(f.stream_id for f in result.failures) == expected and len(expected) == 3
    assert all("abstaining" in f.message for f in result.failures)
    frames = sum(s.num_frames for s in streams if s.stream_id in expected)
    assert (result.scored.failed_streams, result.scored.failed_frames) == (3, frames)
    assert result.scored.failure_rule == "wrong" and honest.scored.failed_frames == 0
    assert result.metrics.overall.accuracy.num_frames == honest.metrics.overall.accuracy.num_frames
    assert sorted(f.stream_id for f in result.metrics.failed) == expected
    for delta in result.protocol_config.deltas_ms:
        assert result.metrics.f1_at(delta) <= honest.metrics.f1_at(delta)
    assert result.metrics.overall.accuracy.frame_accuracy <= honest.metrics.overall.accuracy.frame_accuracy

    saved = load_failed_streams(run_dir)
    by_id = {s.stream_id: s for s in streams}
    assert sorted(f.stream_id for f in saved) == expected
    assert all(np.array_equal(f.labels, by_id[f.stream_id].labels) for f in saved)
    assert load_result(run_dir) == result

    res = CliRunner().invoke(app, ["score", "online", str(run_dir), "--json"])
    assert res.exit_code == 0, res.output
    rescored = json.loads(res.output)
    assert rescored == json.loads(result.metrics.model_dump_json())


@pytest.mark.processes
def test_rescoring_an_older_run_without_saved_labels_says_what_it_left_out(tmp_path: Path) -> None:
    """arrays.npz written before failed streams were saved: the re-score cannot count them and says so."""
    streams = make_streams(SyntheticConfig(seed=0, num_streams=6, duration_s=2.0))
    first = sorted(frame_feature(next(iter(s.frames())).inputs) for s in streams)
    run = config(tmp_path, "old", "offender-abstainer", abstain_below=(first[0] + first[1]) / 2)
    result, _, run_dir = execute_run(run)
    (failure,) = result.failures
    with np.load(run_dir / "arrays.npz") as arrays:
        kept = {k: arrays[k] for k in arrays.files if not k.startswith("f")}
    np.savez_compressed(run_dir / "arrays.npz", **kept)  # type: ignore[arg-type]
    res = CliRunner().invoke(app, ["score", "online", str(run_dir), "--json"])
    assert res.exit_code == 0, res.output
    warnings = json.loads(res.output)["headline"]["warnings"]
    expected = f"1 failed test stream(s) ({failure.stream_id}) have no labels in arrays.npz"
    assert any(expected in w for w in warnings)


def replayed(tmp_path: Path, adapter: str, isolate: bool = True, **options: Any) -> Any:
    run = config(tmp_path, "x", adapter, **options).model_copy(
        update={"data": SyntheticConfig(seed=0, num_streams=3, duration_s=2.0), "isolate": isolate}
    )
    result, _, _ = execute_run(run)
    causality = execute_causality(run, CausalityConfig(sealed=False, cut_seed=1, streams=3))[0]
    return result, next(c for c in causality.report.checks if c.name == "scored_replay")


@pytest.mark.processes
def test_a_stream_that_failed_only_in_the_scored_run_is_a_finding(tmp_path: Path) -> None:
    """FailAtAdapter fails the second stream an instance sees: in the scored run (one instance, in
    process) syn-0001, in the audit (a fresh instance per replay) nothing. The replay answers a stream the
    scored run failed on: the model behaves differently when audited."""
    result, check = replayed(tmp_path, "tests.support:FailAtAdapter", isolate=False, stream=1, frame=4)
    assert [(f.stream_id, f.frame) for f in result.failures] == [("syn-0001", 4)]
    assert not check.passed and check.first_stream == "syn-0001" and check.first_frame == 4
    assert "behaves differently when audited: syn-0001 failed in the scored run (frame 4" in check.detail


@pytest.mark.processes
def test_a_stream_that_fails_again_in_the_replay_is_consistent(tmp_path: Path) -> None:
    """The abstainer fails the same streams whenever it sees them: the replay confirms the failure."""
    streams = make_streams(SyntheticConfig(seed=0, num_streams=3, duration_s=2.0))
    first = sorted(frame_feature(next(iter(s.frames())).inputs) for s in streams)
    result, check = replayed(tmp_path, "offender-abstainer", abstain_below=(first[0] + first[1]) / 2)
    assert len(result.failures) == 1
    assert check.passed, check.detail
    assert "saved outputs of syn-0000, syn-0001, syn-0002:" in check.detail  # the failed one replayed too


def test_a_failed_streams_arrays_are_checked_at_the_edge(tmp_path: Path) -> None:
    labels = np.zeros((4, 2), dtype=bool)
    good = FailedStream("f", "test", 0, None, (np.arange(4, dtype=np.int64) + 1) * 10**8, labels, 1, "boom")
    for name, value in (("labels", np.zeros((3, 2), dtype=bool)), ("frame_times_ns", np.zeros(0, np.int64))):
        arrays = failed_to_arrays([good])
        arrays[f"f0/{name}"] = value
        np.savez(tmp_path / "arrays.npz", **arrays)  # type: ignore[arg-type]
        with pytest.raises(ResultFileError, match=rf"failed stream f0 \('f'\): f0/{name} has dtype"):
            load_failed_streams(tmp_path)
    arrays = failed_to_arrays([good])
    arrays["f1/labels"] = labels  # a member of no failed stream (there is no f1/meta)
    np.savez(tmp_path / "arrays.npz", **arrays)  # type: ignore[arg-type]
    with pytest.raises(ResultFileError, match="'f1/labels' belongs to no stream"):
        load_failed_streams(tmp_path)
    np.savez(tmp_path / "arrays.npz", **failed_to_arrays([good]))  # type: ignore[arg-type]
    (back,) = load_failed_streams(tmp_path)
    assert (back.stream_id, back.frame, back.error, back.labels.dtype) == ("f", 1, "boom", np.dtype(bool))
