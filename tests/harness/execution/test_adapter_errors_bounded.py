"""A model's words in a failure record are bounded: an exception whose message runs to megabytes is
recorded with its start and its end and the count of characters left out, in process, in a sealed or
isolated worker's reply and in a serving worker's reply. Before, a 20 MB message was stored three times
(125 MB of result.json, 63 MB of events.jsonl) and `run`'s console summary never finished printing it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Prediction
from streambench.harness.execution.adapter_errors import (
    MESSAGE_LIMIT,
    TRACEBACK_LIMIT,
    AdapterCallError,
    bounded,
)
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.execution.executor import failure_event
from tests.support import ScriptedAdapter, make_stream

HUGE = "start " + "m" * 5_000_000 + " the end"


def _raise_huge(frame: Frame) -> Prediction:
    if frame.index == 3:
        raise RuntimeError(HUGE)
    return Prediction(scores=np.asarray([0.2, 0.8], dtype=np.float32))


def test_bounded_keeps_the_start_and_the_end_and_counts_what_it_left_out() -> None:
    assert bounded("short") == "short"
    text = bounded(HUGE, 1000)
    assert len(text) <= 1000 and bounded(text, 1000) == text
    assert text.startswith("start mmm") and text.endswith("mmm the end")
    left_out = len(HUGE) - len(text.replace(text[text.index(" [") : text.index("] ") + 2], ""))
    assert f"[{left_out:,} characters left out]" in text


@pytest.mark.parametrize("pacing", ["unpaced", "paced"])
def test_a_huge_exception_message_is_recorded_bounded_in_process(pacing: str) -> None:
    engine = Engine(ScriptedAdapter(_raise_huge), EngineConfig(warmup_frames=0, pacing=pacing))  # type: ignore[arg-type]
    with pytest.raises(AdapterCallError) as caught:
        engine.run_stream(make_stream("clip-1", num_frames=8, fps=1000.0))
    message = str(caught.value)
    assert message.startswith(
        "adapter 'scripted', stream 'clip-1', frame 3: predict() raised RuntimeError: start"
    )
    assert message.endswith("the end") and len(message) <= MESSAGE_LIMIT + 100
    event = failure_event(caught.value, "test")
    assert len(event.message) <= MESSAGE_LIMIT + 100 and len(event.traceback) <= TRACEBACK_LIMIT + 100
    assert event.traceback.rstrip().endswith("the end")  # the exception's line, at the end, is kept


def test_a_workers_reply_describing_a_huge_exception_is_bounded() -> None:
    from streambench.harness.execution.isolation_worker import describe

    try:
        raise RuntimeError(HUGE)
    except RuntimeError as exc:
        reply = describe(exc)
    assert len(reply["message"]) <= MESSAGE_LIMIT + 100 and len(reply["traceback"]) <= TRACEBACK_LIMIT + 100
    assert reply["message"].endswith("the end") and reply["traceback"].rstrip().endswith("the end")


def test_a_serving_workers_error_reply_for_a_huge_exception_is_bounded() -> None:
    from streambench.harness.execution.sealed_feed import encode_frame
    from streambench.harness.execution.serving_worker import FIRST, ServingCore, encode_batch

    core = ServingCore(lambda: ScriptedAdapter(_raise_huge), "replicas", 1)  # type: ignore[arg-type,return-value]
    frame = Frame(index=3, t=0.1, inputs={"x": np.zeros(2, dtype=np.float32)})
    reply = core.serve(encode_batch([(7, FIRST, encode_frame(frame))]))
    assert reply[:1] == b"E" and len(reply) < MESSAGE_LIMIT + TRACEBACK_LIMIT + 500
    error = json.loads(reply[1:])
    assert error["message"].endswith("the end") and error["traceback"].rstrip().endswith("the end")
