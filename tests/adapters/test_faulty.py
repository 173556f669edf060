"""The planted faulty adapter: an honest model everywhere but the one stream and frame it is told to fail.

The faults that end a process (hang, exit, segv) are exercised in a worker process by
tests/harness/execution/test_isolation.py; here they are only checked not to fire where they must not.
"""

from __future__ import annotations

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Prediction
from streambench.adapters.faulty import FaultyAdapter, FaultyOptions, PlantedFault, stream_fingerprint
from streambench.adapters.registry import AdapterLoadError, create_adapter
from streambench.harness.execution.adapter_errors import AdapterCallError, AdapterOutputError
from streambench.harness.execution.engine import Engine, EngineConfig
from tests.support import make_stream

CLASSES = ("background", "a", "b")


def _frames(values: list[float]) -> list[Frame]:
    return [
        Frame(index=i, t=(i + 1) / 10, inputs={"audio": np.full(4, v, dtype=np.float32), "visual": None})
        for i, v in enumerate(values)
    ]


def _adapter(**options: object) -> FaultyAdapter:
    return FaultyAdapter(FaultyOptions.model_validate({"classes": CLASSES, **options}))


def _scores(adapter: FaultyAdapter, frames: list[Frame]) -> np.ndarray:
    outputs = [adapter.predict(f) for f in frames]
    assert all(isinstance(o, Prediction) and o.refers_to is None for o in outputs)
    return np.stack([o.scores for o in outputs if isinstance(o, Prediction)])


def test_honest_model_is_a_smoothed_sigmoid_split_over_the_event_classes() -> None:
    adapter = _adapter(gain=2.0, decay=0.5)
    scores = _scores(adapter, _frames([1.0, 1.0, -2.0]))
    smoothed = np.array([0.5, 0.75, -0.625])  # s_t = 0.5 s_(t-1) + 0.5 x_t; a missing modality is skipped
    p = 1 / (1 + np.exp(-2.0 * smoothed))
    expected = np.stack([1 - p, p / 2, p / 2], axis=1).astype(np.float32)
    np.testing.assert_allclose(scores, expected, rtol=1e-6)
    assert scores.dtype == np.float32 and scores.shape == (3, 3)


def test_reset_state_forgets_the_stream() -> None:
    adapter = _adapter()
    first = _scores(adapter, _frames([3.0, -1.0, 0.5]))
    adapter.reset_state()
    np.testing.assert_array_equal(_scores(adapter, _frames([3.0, -1.0, 0.5])), first)


def test_causal_a_prefix_does_not_depend_on_the_future() -> None:
    adapter = _adapter()
    full = _scores(adapter, _frames([0.2, 0.9, -0.4, 5.0]))
    adapter.reset_state()
    changed = _scores(adapter, _frames([0.2, 0.9, 7.0, -5.0]))
    np.testing.assert_array_equal(full[:2], changed[:2])
    assert not np.array_equal(full[2], changed[2])


@pytest.mark.parametrize(
    ("fault", "check"),
    [
        ("raise", "raises"),
        ("nan", "nan"),
        ("shape", "shape"),
    ],
)
def test_fault_fires_at_the_chosen_frame_only(fault: str, check: str) -> None:
    adapter = _adapter(fault=fault, at_frame=2)
    frames = _frames([0.1] * 5)
    for frame in frames[:2]:
        out = adapter.predict(frame)
        assert isinstance(out, Prediction) and np.isfinite(out.scores).all() and out.scores.shape == (3,)
    if check == "raises":
        with pytest.raises(RuntimeError, match="planted fault at frame 2"):
            adapter.predict(frames[2])
    else:
        out = adapter.predict(frames[2])
        assert isinstance(out, Prediction)
        if check == "nan":
            assert out.scores.shape == (3,) and np.isnan(out.scores).all()
        else:
            assert out.scores.shape == (4,)
    for frame in frames[3:]:  # only at_frame: the stream goes on honestly
        out = adapter.predict(frame)
        assert isinstance(out, Prediction) and np.isfinite(out.scores).all() and out.scores.shape == (3,)


def test_stream_index_counts_streams_not_resets_and_warm_up_is_stream_0() -> None:
    adapter = _adapter(fault="raise", stream_index=2, at_frame=1, classes=None)
    engine = Engine(adapter, EngineConfig(warmup_frames=5))
    engine.warm_up(make_stream("warm", num_frames=5))  # stream 0 (reset, frames, reset)
    engine.run_stream(make_stream("s1", num_frames=4))  # stream 1: its reset follows the warm-up's
    adapter.reset_state()
    adapter.reset_state()  # resets without frames in between begin no stream
    with pytest.raises(AdapterCallError) as caught:
        engine.run_stream(make_stream("s2", num_frames=4))
    assert (caught.value.stream_id, caught.value.frame) == ("s2", 1)
    assert adapter.streams_seen == 3
    engine.run_stream(make_stream("s3", num_frames=4))  # once per instance


def test_stream_fingerprint_chooses_by_data_in_any_instance_and_order() -> None:
    target, other = make_stream("target", num_frames=6), make_stream("other", num_frames=6)
    fingerprint = stream_fingerprint(next(iter(target.frames())))
    assert fingerprint != stream_fingerprint(next(iter(other.frames())))
    assert len(fingerprint) == 8 and int(fingerprint, 16) >= 0
    for order in ([other, target], [target, other, target]):
        engine = Engine(_adapter(fault="nan", stream_fingerprint=fingerprint, at_frame=3, classes=None))
        for stream in order:
            if stream is target:
                with pytest.raises(AdapterOutputError) as caught:
                    engine.run_stream(stream)
                assert (caught.value.stream_id, caught.value.frame) == ("target", 3)
            else:
                assert engine.run_stream(stream).num_predictions == 6


def test_more_faults_each_on_its_own_stream() -> None:
    streams = [make_stream(f"s{i}", num_frames=6) for i in range(4)]
    prints = [stream_fingerprint(next(iter(s.frames()))) for s in streams]
    options = {
        "classes": None,
        "fault": "raise",
        "stream_fingerprint": prints[1],
        "at_frame": 4,
        "more_faults": [{"fault": "shape", "stream_fingerprint": prints[3], "at_frame": 0}],
    }
    engine = Engine(FaultyAdapter(FaultyOptions.model_validate(options)), EngineConfig(warmup_frames=0))
    outcome = {}
    for stream in streams:
        try:
            outcome[stream.stream_id] = ("ok", engine.run_stream(stream).num_predictions)
        except (AdapterCallError, AdapterOutputError) as exc:
            outcome[stream.stream_id] = (type(exc).__name__, exc.frame)
    assert outcome == {
        "s0": ("ok", 6),
        "s1": ("AdapterCallError", 4),
        "s2": ("ok", 6),
        "s3": ("AdapterOutputError", 0),
    }


def test_none_plants_nothing_and_options_list_every_fault() -> None:
    assert FaultyOptions().planted == ()
    options = FaultyOptions(fault="leak", more_faults=(PlantedFault(fault="hang", stream_index=3),))
    assert [p.fault for p in options.planted] == ["leak", "hang"]


def test_leak_keeps_memory_from_at_frame_on_and_reset_does_not_free_it() -> None:
    adapter = _adapter(fault="leak", at_frame=2, leak_mb_per_frame=0.5)
    _scores(adapter, _frames([0.0] * 5))  # frames 2, 3, 4 leak
    adapter.reset_state()
    assert len(adapter.leaked) == 3
    assert sum(a.nbytes for a in adapter.leaked) == 3 * 2**19
    _scores(adapter, _frames([0.0] * 5))  # stream 1 is not the chosen one
    assert len(adapter.leaked) == 3


def test_process_ending_faults_do_not_fire_on_other_streams_or_frames() -> None:
    for fault in ("hang", "exit", "segv"):
        adapter = _adapter(fault=fault, stream_index=1, at_frame=1)
        assert _scores(adapter, _frames([0.3] * 4)).shape == (4, 3)  # stream 0
        adapter.reset_state()
        assert _scores(adapter, _frames([0.3])).shape == (1, 3)  # stream 1, before at_frame


def test_registered_with_data_bound_classes_and_validated_options() -> None:
    adapter = create_adapter("faulty", {"fault": "segv", "at_frame": 7}, data_bound={"classes": CLASSES})
    assert isinstance(adapter, FaultyAdapter)
    assert adapter.info.name == "faulty" and adapter.info.classes == CLASSES
    with pytest.raises(AdapterLoadError, match="fault"):
        create_adapter("faulty", {"fault": "explode"})
    with pytest.raises(AdapterLoadError, match="stream_fingerprint"):
        create_adapter("faulty", {"stream_fingerprint": "not-hex"})
