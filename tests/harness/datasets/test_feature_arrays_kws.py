"""The 3-class keyword example (examples/kws: two keywords and background, 10 ms feature frames, a
torch-module factory in the example's package): its headline F1 leaves the background out, and equals
scikit-learn's ``f1_score(..., labels=[the keywords])`` on the same frames (issue 37 items 4 and 6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import f1_score

from examples.kws.make_data import stream as kws_stream
from streambench.harness.datasets.catalog import background_class_of, make_streams
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.execution.setup import create_bound, data_bound_of
from streambench.harness.io.config_file import load_config_file
from streambench.protocols import online

ROOT = Path(__file__).resolve().parents[3]


def test_the_keyword_examples_headline_f1_is_scikit_learns_over_the_keywords(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    for i in range(4):
        mel, labels = kws_stream(rng)
        np.savez(tmp_path / f"kws-{i}.npz", mel=mel, labels=labels)
    example = load_config_file(ROOT / "examples" / "kws" / "kws.toml")
    example["data"]["directory"] = str(tmp_path)
    config = RunConfig.model_validate(example)
    streams = make_streams(config.data)
    adapter = create_bound(config, data_bound_of(streams[0]))  # the example's factory, told the data
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    recordings = [engine.run_stream(s) for s in streams]
    classes = list(streams[0].classes)
    score = online.score(recordings, config.protocol, classes, background=background_class_of(config.data))
    assert classes == ["background", "yes", "no"] and score.scored_classes == ["yes", "no"]

    # the same frames, decided as the protocol decides them (softmax scores >= 0.5), one prediction each
    truth = np.concatenate([r.labels for r in recordings])
    assert all(np.array_equal(r.refers_to, np.arange(r.num_frames)) for r in recordings)
    decided = np.concatenate([r.scores >= config.protocol.decision.threshold for r in recordings])
    keywords = f1_score(truth, decided, labels=[1, 2], average="micro")
    point = score.overall.accuracy.curves["frame"]["strict"][0]  # F1@0 ms, Strict, frame units
    assert point.delta_ms == 0 and 0.5 < keywords < 1.0
    assert point.f1_micro == pytest.approx(keywords, abs=1e-6)
    assert score.headline.f1_strict[0].estimate == pytest.approx(keywords, abs=1e-6)
    assert point.f1_macro == pytest.approx(f1_score(truth, decided, labels=[1, 2], average="macro"), abs=1e-6)
    every = f1_score(truth, decided, labels=[0, 1, 2], average="micro")  # the background counted: higher
    assert point.f1_micro_all_classes == pytest.approx(every, abs=1e-6) and every > keywords
