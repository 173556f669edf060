"""The sealed worker (issue 15, item 2; harness/execution/sealed_feed.py): the future does not exist in
the adapter's process. The cheats are written into the test: a model that walks the call stack or the
garbage collector for the engine's frame list reads the future in process (so the protection is what
the test measures, not an accident) and finds nothing in a sealed worker; labels never reach it; its
outputs equal the in-process run's; a hang and a crash are still named by stream and frame."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from streambench.adapters.contract import Frame
from streambench.adapters.faulty import stream_fingerprint
from streambench.adapters.sneaky import StackPeekingAdapter, StackPeekingOptions
from streambench.harness.datasets.catalog import make_streams
from streambench.harness.execution.adapter_errors import AdapterCrashError, AdapterTimeoutError
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.engine import Engine
from streambench.harness.execution.isolation import IsolatedEngine
from streambench.harness.execution.sealed_feed import decode_frame, encode_frame
from streambench.harness.execution.sealing import seal_frames
from streambench.harness.execution.setup import build_adapter
from streambench.protocols.recording import StreamRecording


def config(adapter: str = "reference", **options: Any) -> RunConfig:
    return RunConfig.model_validate(
        {
            "adapter": adapter,
            "adapter_options": options,
            "data": {"num_streams": 2, "duration_s": 5.0, "seed": 0},
            "engine": {"warmup_frames": 10},
        }
    )


def in_process(run: RunConfig) -> dict[str, StreamRecording]:
    streams = make_streams(run.data)
    engine = Engine(build_adapter(run, streams[0]), run.engine)
    return {s.stream_id: engine.run_stream(s) for s in streams}


def sealed(run: RunConfig, **limits: Any) -> IsolatedEngine:
    return IsolatedEngine(run, IsolationConfig(sealed=True, **limits))


def same_outputs(a: StreamRecording, b: StreamRecording) -> bool:
    return (
        np.array_equal(a.emitted_at, b.emitted_at)
        and np.array_equal(a.refers_to, b.refers_to)
        and np.array_equal(a.scores, b.scores)
    )


def test_frames_cross_the_pipe_unchanged_read_only_and_owning_their_memory() -> None:
    audio = np.arange(12, dtype=np.float32).reshape(3, 4)[1]  # a view of a larger array
    frame = Frame(index=7, t=0.28, inputs={"audio": audio, "visual": None, "n": np.int16(3)}, timestamps=None)
    back = decode_frame(encode_frame(frame))
    assert (back.index, back.t, back.timestamps) == (7, 0.28, None)
    np.testing.assert_array_equal(back.inputs["audio"], audio)
    assert back.inputs["audio"].dtype == np.float32 and back.inputs["visual"] is None
    assert back.inputs["audio"].base is None and not back.inputs["audio"].flags.writeable
    assert back.inputs["n"].dtype == np.int16 and int(back.inputs["n"]) == 3


@pytest.mark.processes
def test_sealed_outputs_equal_the_in_process_run_and_labels_never_reach_the_worker() -> None:
    run = config()
    local = in_process(run)
    with sealed(run) as engine:
        assert engine.warm_up() == 10 and engine.stream_ids == tuple(local)
        for stream_id, expected in local.items():
            got = engine.run_stream(stream_id)
            assert same_outputs(got, expected), stream_id
            np.testing.assert_array_equal(got.labels, expected.labels)  # put back by the parent
            np.testing.assert_array_equal(got.frame_times_ns, expected.frame_times_ns)


@pytest.mark.slow
@pytest.mark.parametrize("via", ["stack", "gc"])
def test_a_model_that_searches_the_process_for_the_frame_list_reads_the_future_only_in_process(
    via: str,
) -> None:
    run = config("offender-stack-peeking", via=via)
    honest = in_process(config("offender-stack-peeking", via=via, honest_resets=10**6))
    cheat = in_process(run)
    stream_id = next(iter(honest))
    # in process the cheat works: the engine's frame list is on the stack and in the heap
    assert not same_outputs(cheat[stream_id], honest[stream_id])
    with sealed(run) as engine:
        for sid, expected in honest.items():
            assert same_outputs(engine.run_stream(sid), expected), sid  # nothing to find: honest


def test_the_in_process_cheat_counts_its_peeks() -> None:
    """The control for the test above: the peeks are real (every frame but the last of each stream)."""
    run = config("offender-stack-peeking")
    streams = make_streams(run.data)
    adapter = build_adapter(run, streams[0])
    assert isinstance(adapter, StackPeekingAdapter)
    Engine(adapter, run.engine).run_stream(streams[0])
    assert adapter.peeked == streams[0].num_frames - 1
    assert StackPeekingOptions().honest_resets == 0


@pytest.mark.processes
def test_a_hang_and_a_crash_in_a_sealed_worker_name_stream_and_frame() -> None:
    streams = make_streams(config().data)
    prints = [stream_fingerprint(seal_frames(s.frames())[0]) for s in streams]
    run = config("faulty", fault="hang", stream_fingerprint=prints[1], at_frame=4)
    with sealed(run, frame_timeout_s=1.0) as engine:
        assert same_outputs(engine.run_stream("syn-0000"), in_process(config("faulty"))["syn-0000"])
        with pytest.raises(AdapterTimeoutError) as hang:
            engine.run_stream("syn-0001")
        assert (hang.value.stream_id, hang.value.frame, hang.value.scope) == ("syn-0001", 4, "frame")
    with sealed(config("faulty", fault="exit", stream_fingerprint=prints[0], at_frame=2)) as engine:
        with pytest.raises(AdapterCrashError) as crash:
            engine.run_stream("syn-0000")
        assert (crash.value.stream_id, crash.value.frame) == ("syn-0000", 2)
        assert same_outputs(engine.run_stream("syn-0001"), in_process(config("faulty"))["syn-0001"])


@pytest.mark.processes
def test_any_stream_the_parent_holds_runs_sealed_but_not_in_a_plain_worker() -> None:
    run = config()
    streams = make_streams(run.data)
    variant = streams[1]
    with sealed(run) as engine:
        got = engine.run(variant)
        assert same_outputs(got, in_process(run)[variant.stream_id])
    plain_worker = IsolationConfig(sealed=False)
    with IsolatedEngine(run, plain_worker) as plain, pytest.raises(ValueError, match="needs a sealed worker"):
        plain.run(variant)
