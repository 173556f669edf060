"""The engine: reset per stream, warm-up unscored, batch-1 frame loop, validation of adapter outputs."""

from __future__ import annotations

import time

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Prediction
from streambench.harness.execution.engine import AdapterOutputError, Engine, EngineConfig
from tests.support import ScriptedAdapter, constant, make_stream

OK = [0.2, 0.8]


def test_reset_exactly_once_per_stream_and_frames_in_order() -> None:
    adapter = ScriptedAdapter(constant(OK))
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    streams = [make_stream(f"s{i}", num_frames=5 + i) for i in range(3)]
    for stream in streams:
        engine.run_stream(stream)
    expected: list[tuple[str, int | None]] = []
    for stream in streams:
        expected.append(("reset", None))
        expected.extend(("predict", i) for i in range(stream.num_frames))
    assert adapter.calls == expected


def test_warmup_is_fed_then_reset_and_never_recorded() -> None:
    seen: list[float] = []

    def script(frame: Frame) -> Prediction:
        seen.append(float(frame.inputs["x"][0]))
        return Prediction(scores=np.asarray(OK, dtype=np.float32))

    adapter = ScriptedAdapter(script)
    engine = Engine(adapter, EngineConfig(warmup_frames=100))
    warm = make_stream("warm", num_frames=150)
    scored = make_stream("scored", num_frames=30)
    assert engine.warm_up(warm) == 100
    rec = engine.run_stream(scored)
    warm_marker, scored_marker = float(abs(hash("warm")) % 1000), float(abs(hash("scored")) % 1000)
    assert seen.count(warm_marker) == 100 and seen.count(scored_marker) == 30
    # reset before warm-up, after warm-up, before the scored stream
    assert [c for c in adapter.calls if c[0] == "reset"] == [("reset", None)] * 3
    assert adapter.calls[101] == ("reset", None)
    assert rec.num_frames == 30 and rec.latency_ns.shape == (30,) and rec.num_predictions == 30
    np.testing.assert_array_equal(rec.emitted_at, np.arange(30))


def test_warmup_stream_too_short_is_an_error() -> None:
    engine = Engine(ScriptedAdapter(constant(OK)), EngineConfig(warmup_frames=100))
    with pytest.raises(ValueError, match="warm-up stream 'w' has 50 frames, 100 are needed"):
        engine.warm_up(make_stream("w", num_frames=50))


def test_recording_holds_scores_refers_to_and_latency() -> None:
    def script(frame: Frame) -> Prediction | list[Prediction] | None:
        if frame.index == 0:
            return None
        scores = np.array([0.1, 0.9], dtype=np.float32) * frame.index
        if frame.index % 2:
            return Prediction(scores=scores, refers_to=frame.index - 1)
        return [
            Prediction(scores=scores),
            Prediction(scores=scores + 1, refers_to=0),
            Prediction(scores=scores),
        ]

    rec = Engine(ScriptedAdapter(script), EngineConfig(warmup_frames=0)).run_stream(make_stream(num_frames=8))
    # frames 1,3,5,7 emit one prediction, frames 2,4,6 three: 4 + 9 = 13 > 8 frames (buffers grow)
    assert rec.num_predictions == 13
    np.testing.assert_array_equal(rec.emitted_at, [1, 2, 2, 2, 3, 4, 4, 4, 5, 6, 6, 6, 7])
    np.testing.assert_array_equal(rec.refers_to, [0, 2, 0, 2, 2, 4, 0, 4, 4, 6, 0, 6, 6])
    np.testing.assert_allclose(rec.scores[2], [1.2, 2.8], rtol=1e-6)
    assert rec.scores.dtype == np.float32 and rec.latency_ns.dtype == np.int64
    assert np.all(rec.latency_ns > 0)


def test_fast_path_frames_between_other_outputs_keep_their_place() -> None:
    """The fast path records nothing but the scores of a frame that labels itself; emitted_at and refers_to
    are rebuilt after the stream around the frames that took the full path (None, lists, refers_to,
    float64 scores, a strided view). The fast path's output buffer is reused: the copy must be taken."""
    reused = np.zeros(2, dtype=np.float32)

    def script(frame: Frame) -> Prediction | list[Prediction] | None:
        i = frame.index
        if i == 2:
            return None
        if i == 4:
            earlier = Prediction(scores=np.array([4, 4], dtype=np.float32), refers_to=1)
            return [earlier, Prediction(scores=reused)]
        if i == 5:
            return Prediction(scores=np.array([5, 5], dtype=np.float64))
        if i == 6:
            return Prediction(scores=np.array([6, 0, 7, 0], dtype=np.float32)[::2])  # not contiguous
        if i == 7:
            return Prediction(scores=np.array([7, 7], dtype=np.float32), refers_to=9)  # beyond the end
        reused[:] = (i, -i)
        return Prediction(scores=reused)

    rec = Engine(ScriptedAdapter(script), EngineConfig(warmup_frames=0)).run_stream(make_stream(num_frames=9))
    np.testing.assert_array_equal(rec.emitted_at, [0, 1, 3, 4, 4, 5, 6, 8])
    np.testing.assert_array_equal(rec.refers_to, [0, 1, 3, 1, 4, 5, 6, 8])
    np.testing.assert_array_equal(
        rec.scores, [[0, 0], [1, -1], [3, -3], [4, 4], [3, -3], [5, 5], [6, 7], [8, -8]]
    )
    assert rec.beyond_end == 1 and rec.latency_ns.shape == (9,)


def test_large_finite_scores_are_not_taken_for_inf() -> None:
    # their float32 sum overflows; the finiteness check after the stream must not call them Inf
    big = float(np.finfo(np.float32).max)
    engine = Engine(ScriptedAdapter(constant([big, big])), EngineConfig(warmup_frames=0))
    rec = engine.run_stream(make_stream())
    assert np.all(rec.scores == np.float32(big))


def test_latency_is_measured_at_the_predict_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a virtual clock that moves 1 ns per read and 2 ms inside predict() on odd frames: each frame's
    latency is exactly its own predict(), the next frame's and the loop's work not counted, whatever the
    machine's load (on the wall clock, an even frame's < 2 ms failed when the machine stalled the test)."""
    now = [0]

    def virtual() -> int:
        now[0] += 1
        return now[0]

    def slow(frame: Frame) -> Prediction:
        now[0] += 2_000_000 * (frame.index % 2)  # 2 ms on odd frames
        return Prediction(scores=np.asarray(OK, dtype=np.float32))

    monkeypatch.setattr(time, "perf_counter_ns", virtual)
    rec = Engine(ScriptedAdapter(slow), EngineConfig(warmup_frames=0)).run_stream(make_stream(num_frames=6))
    assert rec.latency_ns.tolist() == [1, 2_000_001] * 3  # the second read of each frame, and its predict()


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        (Prediction(scores=np.zeros(3, dtype=np.float32)), r"scores have shape \(3,\), expected \(2,\)"),
        (Prediction(scores=np.zeros((1, 2), dtype=np.float32)), r"scores have shape \(1, 2\)"),
        (Prediction(scores=np.array([0.5, np.nan], dtype=np.float32)), "NaN or Inf"),
        (Prediction(scores=np.array([np.inf, 0.5])), "NaN or Inf"),
        (Prediction(scores=np.zeros(2, dtype=np.float32), refers_to=-1), "refers_to=-1 is outside"),
        (Prediction(scores=np.zeros(2, dtype=np.float32), refers_to=2.0), "is not a frame index"),  # type: ignore[arg-type]
        (Prediction(scores=[0.5, 0.5]), "scores are a list; expected a numpy.ndarray"),  # type: ignore[arg-type]
        (np.zeros(2), "predict\\(\\) returned ndarray; expected Prediction"),
        ([Prediction(scores=np.zeros(2, dtype=np.float32)), "x"], "returned str"),
    ],
)
@pytest.mark.parametrize("untimed", [False, True], ids=["timed", "untimed"])
def test_contract_violations_name_adapter_stream_and_frame(
    output: object, problem: str, untimed: bool
) -> None:
    def script(frame: Frame) -> object:
        return output if frame.index == 7 else Prediction(scores=np.asarray(OK, dtype=np.float32))

    engine = Engine(ScriptedAdapter(script), EngineConfig(warmup_frames=0))  # type: ignore[arg-type]
    run = engine.run_untimed if untimed else engine.run_stream
    with pytest.raises(AdapterOutputError, match=problem) as info:
        run(make_stream("clip-9", num_frames=20))
    assert info.value.frame == 7 and info.value.stream_id == "clip-9" and info.value.adapter == "scripted"
    assert str(info.value).startswith("adapter 'scripted', stream 'clip-9', frame 7: ")


def test_untimed_run_records_the_same_outputs_without_reading_the_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def script(frame: Frame) -> list[Prediction] | None:
        if frame.index % 4 == 3:
            return None
        x = float(frame.inputs["x"][1])
        now = Prediction(scores=np.array([1 - x / 20, x / 20], dtype=np.float32))
        late = Prediction(scores=np.array([0.5, 0.5], dtype=np.float64), refers_to=max(frame.index - 2, 0))
        return [now, late]

    stream = make_stream("audit", num_frames=12)
    timed = Engine(ScriptedAdapter(script), EngineConfig(warmup_frames=0)).run_stream(stream)
    engine = Engine(ScriptedAdapter(script), EngineConfig(warmup_frames=0))

    def no_clock() -> int:
        raise AssertionError("the untimed run read the clock")

    monkeypatch.setattr(time, "perf_counter_ns", no_clock)
    untimed = engine.run_untimed(stream)
    monkeypatch.undo()
    for field in ("emitted_at", "refers_to", "scores", "labels", "frame_times_ns"):
        np.testing.assert_array_equal(getattr(untimed, field), getattr(timed, field))
    assert untimed.scores.dtype == np.float32 and untimed.emitted_at.size == 18
    assert not untimed.latency_ns.any() and timed.latency_ns.all()
    # a warm-up prefix: only the first frames, then the next run starts from a reset
    adapter = ScriptedAdapter(constant(OK))
    prefix = Engine(adapter, EngineConfig(warmup_frames=0)).run_untimed(stream, max_frames=5)
    assert prefix.num_frames == 5 and adapter.calls == [("reset", None)] + [("predict", i) for i in range(5)]


def test_numpy_integer_refers_to_and_anticipation_are_accepted() -> None:
    def script(frame: Frame) -> Prediction:
        target = np.int64(min(frame.index + 3, 9))  # anticipation: labels a later frame
        return Prediction(scores=np.asarray(OK, dtype=np.float32), refers_to=target)  # type: ignore[arg-type]

    rec = Engine(ScriptedAdapter(script), EngineConfig(warmup_frames=0)).run_stream(
        make_stream(num_frames=10)
    )
    np.testing.assert_array_equal(rec.refers_to, [3, 4, 5, 6, 7, 8, 9, 9, 9, 9])


@pytest.mark.parametrize("mode", ["timed", "untimed", "paced", "warm-up"])
def test_predictions_beyond_the_end_are_dropped_and_counted(mode: str) -> None:
    """An anticipating model labels frame t + 3 at frame t; it cannot know where the stream ends, so
    the predictions past the end are dropped and counted, never an error (the fast and the slow path,
    the untimed and the paced loop, and the warm-up, which validates against its full length)."""

    def script(frame: Frame) -> list[Prediction]:
        ahead = Prediction(scores=np.asarray(OK, dtype=np.float32), refers_to=frame.index + 3)
        return [ahead] if frame.index % 2 else [ahead, Prediction(scores=np.asarray(OK, dtype=np.float64))]

    config = EngineConfig(
        warmup_frames=10 if mode == "warm-up" else 0, pacing="paced" if mode == "paced" else "unpaced"
    )
    engine = Engine(ScriptedAdapter(script), config)
    stream = make_stream(num_frames=10)
    if mode == "warm-up":
        assert engine.warm_up(stream) == 10
        return
    rec = engine.run_untimed(stream) if mode == "untimed" else engine.run_stream(stream)
    assert rec.beyond_end == 3  # frames 7, 8, 9 labelled 10, 11, 12
    assert rec.refers_to.max() == 9 and rec.num_predictions == 5 * 2 + 5 - 3  # even frames emit two
    assert rec.scores.shape == (12, 2)


def test_class_count_mismatch_is_refused() -> None:
    engine = Engine(ScriptedAdapter(constant(OK)), EngineConfig(warmup_frames=0))
    stream = make_stream("three", classes=("a", "b", "c"))
    with pytest.raises(ValueError, match="declares 2 classes, stream 'three' has 3"):
        engine.run_stream(stream)


def test_stage_times_are_drained_per_stream_and_exclude_warmup() -> None:
    from streambench.adapters.contract import StageTimer

    class Staged(ScriptedAdapter):
        def __init__(self) -> None:
            super().__init__(constant(OK))
            self.stages = StageTimer()

        def predict(self, frame: Frame) -> Prediction | list[Prediction] | None:
            with self.stages("busy"):
                end = time.perf_counter_ns() + 200_000
                while time.perf_counter_ns() < end:
                    pass
            with self.stages("idle"):
                pass
            return super().predict(frame)

    adapter = Staged()
    engine = Engine(adapter, EngineConfig(warmup_frames=10))
    engine.warm_up(make_stream("warm", num_frames=10))
    # what holds under any load: a stage is timed inside predict(), so the stages of a stream sum to at
    # most its latencies; each busy stage spins at least 200 us
    rec = engine.run_stream(make_stream("a", num_frames=25))
    assert list(rec.stage_ns) == ["busy", "idle"]
    assert rec.stage_ns["busy"] >= 25 * 200_000
    assert rec.stage_ns["busy"] + rec.stage_ns["idle"] <= rec.latency_ns.sum()  # warm-up frames not counted
    b = engine.run_stream(make_stream("b", num_frames=2))  # drained: stream a's 5 ms are not b's
    assert 2 * 200_000 <= b.stage_ns["busy"] <= b.latency_ns.sum()


def test_flops_per_frame_of_the_reference_model() -> None:
    from streambench.adapters.reference import CausalReferenceAdapter
    from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams

    stream = make_streams(SyntheticConfig(seed=0, num_streams=1))[0]
    flops, reason = Engine(CausalReferenceAdapter(), EngineConfig(warmup_frames=0)).count_flops(stream)
    # two matched filters: [29, 64] x [64, 1] and [29, 128] x [128, 1], 2 FLOPs per multiply-add
    assert (flops, reason) == (2 * 29 * 64 + 2 * 29 * 128, None)
    none, why = Engine(ScriptedAdapter(constant(OK)), EngineConfig(warmup_frames=0)).count_flops(
        make_stream()
    )
    assert none is None and why is not None and "no matrix product" in why


def test_an_adapter_that_raises_is_named_with_stream_and_frame() -> None:
    from streambench.harness.execution.engine import AdapterCallError

    def script(frame: Frame) -> Prediction:
        if frame.index == 3:
            raise MemoryError("out of memory")
        return Prediction(scores=np.asarray(OK, dtype=np.float32))

    with pytest.raises(
        AdapterCallError, match=r"stream 'x', frame 3: predict\(\) raised MemoryError"
    ) as info:
        Engine(ScriptedAdapter(script), EngineConfig(warmup_frames=0)).run_stream(make_stream("x"))
    assert isinstance(info.value.__cause__, MemoryError)

    class BadReset(ScriptedAdapter):
        def reset_state(self) -> None:
            raise RuntimeError("no")

    with pytest.raises(AdapterCallError, match="reset_state"):
        Engine(BadReset(constant(OK)), EngineConfig(warmup_frames=0)).run_stream(make_stream("y"))


@pytest.mark.parametrize(
    ("scores", "problem"),
    [
        (np.array(["a", "b"]), "dtype <U1; expected real numbers"),
        (np.array([None, 1.0], dtype=object), "dtype object"),
        (np.array([1 + 1j, 0]), "dtype complex128"),
        (np.array([1e39, 0.0]), "exceed the float32 range"),
    ],
)
def test_score_dtypes_are_checked(scores: np.ndarray, problem: str) -> None:
    def script(frame: Frame) -> Prediction:
        return Prediction(scores=scores)

    with pytest.raises(AdapterOutputError, match=problem):
        Engine(ScriptedAdapter(script), EngineConfig(warmup_frames=0)).run_stream(make_stream())


class FakeDeviceTimer:
    """Device marks without a GPU: each marked call 'took' the next value of a script on the device."""

    def __init__(self, device_ns: list[int]) -> None:
        self.script, self.starts, self.ends = device_ns, 0, 0

    def start(self) -> None:
        self.starts += 1

    def end(self) -> None:
        self.ends += 1

    def read_ns(self) -> np.ndarray:
        assert self.starts == self.ends
        return np.array(self.script[: self.ends], dtype=np.int64)


def test_device_marks_around_each_predict_and_divergence_flags() -> None:
    from streambench.protocols import online

    timers: list[FakeDeviceTimer] = []

    def factory(n: int) -> FakeDeviceTimer:
        # frame 2 'took' 50 ms on the device, longer than its host time: the adapter did not synchronise
        timers.append(FakeDeviceTimer([1_000] * 2 + [50_000_000] + [1_000] * (n - 3)))
        return timers[-1]

    slow_host = ScriptedAdapter(constant(OK))
    rec = Engine(slow_host, EngineConfig(warmup_frames=0), device_timer=factory).run_stream(
        make_stream(num_frames=6)
    )
    assert timers[0].starts == timers[0].ends == 6
    assert rec.device_ns is not None and rec.device_ns[2] == 50_000_000
    device = online.score(
        [rec], online.OnlineConfig(divergence_factor=1e9), ("background", "event")
    ).overall.speed.device
    assert device is not None and device.latency.n == 6
    assert device.divergent_frames == 1 and device.first_divergent == ["s0:2"]
    plain = Engine(ScriptedAdapter(constant(OK)), EngineConfig(warmup_frames=0)).run_stream(make_stream())
    assert plain.device_ns is None  # a CPU adapter gets no device marks


def test_cuda_adapters_get_event_timers_by_default() -> None:
    from streambench.adapters.contract import AdapterInfo
    from streambench.harness.instruments.cuda_timing import CudaEventTimer

    class OnCuda(ScriptedAdapter):
        @property
        def info(self) -> AdapterInfo:
            return AdapterInfo(
                name="gpu", classes=("background", "event"), modalities=("x",), device="cuda:0"
            )

    assert Engine(OnCuda(constant(OK))).device_timer is CudaEventTimer
    assert Engine(OnCuda(constant(OK)), EngineConfig(device_timing=False)).device_timer is None


def test_features_and_weights_are_recorded_when_asked() -> None:
    def script(frame: Frame) -> Prediction | list[Prediction]:
        i = frame.index
        feats = np.array([i, i + 1, i + 2])
        weights = np.array([0.25, 0.75]) if i % 2 else np.array([1.0, 0.0])
        pred = Prediction(scores=np.asarray(OK, dtype=np.float32), features=feats, weights=weights)
        return pred if i != 3 else [pred, Prediction(scores=np.zeros(2), features=feats, weights=weights)]

    stream = make_stream(num_frames=6)
    plain = Engine(ScriptedAdapter(script), EngineConfig(warmup_frames=0)).run_stream(stream)
    assert plain.features is None and plain.weights is None
    rec = Engine(
        ScriptedAdapter(script), EngineConfig(warmup_frames=0, record=("features", "weights"))
    ).run_stream(stream)
    assert rec.features is not None and rec.weights is not None
    assert rec.features.shape == (7, 3) and rec.weights.shape == (7, 2)  # frame 3 emitted two predictions
    np.testing.assert_array_equal(rec.features[:, 0], [0, 1, 2, 3, 3, 4, 5])
    np.testing.assert_array_equal(rec.weights[1], [0.25, 0.75])


@pytest.mark.parametrize(
    ("features", "problem"),
    [
        (None, r"Prediction\.features is missing"),
        (np.zeros((2, 2)), r"must be a 1-D array of numbers"),
        (np.zeros(5), r"has shape \(5,\), earlier ones \(3,\)"),
    ],
)
def test_bad_recorded_features_name_the_frame(features: object, problem: str) -> None:
    def script(frame: Frame) -> Prediction:
        f = features if frame.index == 4 else np.zeros(3)
        return Prediction(scores=np.asarray(OK, dtype=np.float32), features=f)  # type: ignore[arg-type]

    engine = Engine(ScriptedAdapter(script), EngineConfig(warmup_frames=0, record=("features",)))
    with pytest.raises(AdapterOutputError, match=problem) as info:
        engine.run_stream(make_stream("feat", num_frames=8))
    assert info.value.frame == 4 and info.value.stream_id == "feat"
    paced_config = EngineConfig(warmup_frames=0, record=("features",), pacing="paced")
    paced = Engine(ScriptedAdapter(script), paced_config)
    with pytest.raises(ValueError, match="needs an unpaced run"):
        paced.run_stream(make_stream(num_frames=2))


def test_reused_output_buffers_are_copied_in_every_loop() -> None:
    """An adapter may write every answer into the same arrays: the timed, untimed and recording paths
    must keep what it said at each frame, not its last words."""
    scores = np.zeros(2, dtype=np.float64)  # float64: not the fast path
    features = np.zeros(3)

    def script(frame: Frame) -> Prediction:
        scores[:] = (frame.index, -frame.index)
        features[:] = frame.index
        return Prediction(scores=scores, features=features)

    stream = make_stream(num_frames=5)
    config = EngineConfig(warmup_frames=0, record=("features",))
    timed = Engine(ScriptedAdapter(script), config).run_stream(stream)
    untimed = Engine(ScriptedAdapter(script), config).run_untimed(stream)
    for rec in (timed, untimed):
        np.testing.assert_array_equal(rec.scores[:, 0], [0, 1, 2, 3, 4])
    assert timed.features is not None
    np.testing.assert_array_equal(timed.features[:, 0], [0, 1, 2, 3, 4])


def test_cpu_time_is_recorded_beside_wall_time_and_survives_the_arrays() -> None:
    from streambench.protocols.recording import from_arrays, to_arrays

    def spin(frame: Frame) -> Prediction:
        end = time.thread_time_ns() + 200_000  # 0.2 ms of this thread's CPU
        while time.thread_time_ns() < end:
            pass
        return Prediction(scores=np.asarray(OK, dtype=np.float32))

    stream = make_stream("s", num_frames=12)
    plain = Engine(ScriptedAdapter(spin), EngineConfig(warmup_frames=0)).run_stream(stream)
    assert plain.cpu_ns is None and plain.cpu_clock is None
    rec = Engine(ScriptedAdapter(spin), EngineConfig(warmup_frames=0, cpu_time="thread")).run_stream(stream)
    assert rec.cpu_clock == "thread" and rec.cpu_ns is not None and rec.cpu_ns.shape == (12,)
    assert (rec.cpu_ns >= 200_000).all() and rec.latency_ns.shape == (12,) and (rec.latency_ns > 0).all()
    assert rec.num_predictions == 12
    assert set(rec.context_switches) == {"voluntary", "involuntary"}
    assert all(v >= 0 for v in rec.context_switches.values())
    (back,) = from_arrays(to_arrays([rec]))
    np.testing.assert_array_equal(back.cpu_ns, rec.cpu_ns)
    assert back.cpu_clock == "thread" and back.context_switches == rec.context_switches
    (old,) = from_arrays(to_arrays([plain]))  # a recording without them reads back without them
    assert old.cpu_ns is None and old.cpu_clock is None


def test_cpu_time_needs_an_unpaced_run() -> None:
    engine = Engine(
        ScriptedAdapter(constant(OK)), EngineConfig(warmup_frames=0, pacing="paced", cpu_time="thread")
    )
    with pytest.raises(ValueError, match="CPU time needs an unpaced run"):
        engine.run_stream(make_stream("s", num_frames=3))


def test_the_beyond_end_count_survives_the_arrays_and_a_corrupt_one_is_refused() -> None:
    from streambench.protocols.recording import from_arrays, to_arrays

    def script(frame: Frame) -> Prediction:
        return Prediction(scores=np.asarray(OK, dtype=np.float32), refers_to=frame.index + 2)

    rec = Engine(ScriptedAdapter(script), EngineConfig(warmup_frames=0)).run_stream(make_stream(num_frames=6))
    arrays = to_arrays([rec])
    assert from_arrays(arrays)[0].beyond_end == rec.beyond_end == 2
    arrays["s0/beyond_end"] = np.array([1, 2])
    with pytest.raises(ValueError, match="beyond_end must be one non-negative integer"):
        from_arrays(arrays)
