"""The planted faulty adapter's batch mode (``max_batch_size > 0``): honest everywhere but the stream and
frame it is told to fail, where the whole ``predict_batch`` call commits the fault (short, long and
nothing spoil the list of outputs; raise raises; nan and shape spoil that stream's output)."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Prediction
from streambench.adapters.faulty import FaultyAdapter, FaultyOptions, stream_fingerprint

CLASSES = ("background", "a", "b")


def _frames(value: float, n: int) -> list[Frame]:
    return [
        Frame(index=i, t=(i + 1) / 10, inputs={"audio": np.full(4, value + i, dtype=np.float32)})
        for i in range(n)
    ]


def _adapter(**options: object) -> FaultyAdapter:
    return FaultyAdapter(FaultyOptions.model_validate({"classes": CLASSES, "max_batch_size": 8, **options}))


def test_a_batch_answers_each_stream_as_predict_does() -> None:
    one, two = _frames(0.5, 3), _frames(-1.0, 3)
    batched = _adapter()
    outputs = [batched.predict_batch([(7, a), (9, b)]) for a, b in zip(one, two, strict=True)]
    alone = _adapter()
    expected = [alone.predict(f) for f in one]
    alone.reset_state()
    expected_two = [alone.predict(f) for f in two]
    for k in range(3):
        first, second = outputs[k]
        assert isinstance(first, Prediction) and isinstance(second, Prediction)
        np.testing.assert_allclose(first.scores, expected[k].scores)  # type: ignore[union-attr]
        np.testing.assert_allclose(second.scores, expected_two[k].scores)  # type: ignore[union-attr]
    assert batched.max_batch_size == 8 and _adapter(max_batch_size=0).max_batch_size == 0


@pytest.mark.parametrize(("fault", "count"), [("short", 1), ("long", 3), ("nothing", None)])
def test_the_batch_faults_spoil_the_list_at_the_chosen_frame_only(fault: str, count: int | None) -> None:
    one, two = _frames(0.5, 3), _frames(-1.0, 3)
    adapter = _adapter(fault=fault, stream_fingerprint=stream_fingerprint(two[0]), at_frame=1)
    assert len(adapter.predict_batch([(1, one[0]), (2, two[0])])) == 2  # frame 0: honest
    spoilt = adapter.predict_batch([(1, one[1]), (2, two[1])])
    assert (None if spoilt is None else len(spoilt)) == count
    assert len(adapter.predict_batch([(1, one[2]), (2, two[2])])) == 2  # after it: honest again


def test_raise_and_shape_in_a_batch() -> None:
    one, two = _frames(0.5, 2), _frames(-1.0, 2)
    raising = _adapter(fault="raise", stream_fingerprint=stream_fingerprint(one[0]), at_frame=1)
    raising.predict_batch([(1, one[0]), (2, two[0])])
    with pytest.raises(RuntimeError, match="planted fault at frame 1"):
        raising.predict_batch([(1, one[1]), (2, two[1])])
    shaped = _adapter(fault="shape", stream_fingerprint=stream_fingerprint(two[0]), at_frame=0)
    first, second = shaped.predict_batch([(1, one[0]), (2, two[0])])
    assert first.scores.shape == (3,) and second.scores.shape == (4,)  # type: ignore[union-attr]


def test_without_a_batch_mode_predict_batch_is_refused_and_predict_ignores_batch_faults() -> None:
    with pytest.raises(NotImplementedError, match="no batch mode"):
        _adapter(max_batch_size=0).predict_batch([(1, _frames(0.0, 1)[0])])
    adapter = _adapter(fault="nothing", stream_index=0, at_frame=0)
    assert isinstance(adapter.predict(_frames(0.0, 1)[0]), Prediction)
