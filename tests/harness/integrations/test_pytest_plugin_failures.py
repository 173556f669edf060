"""The ``streambench_latency`` fixture (harness/integrations/pytest_plugin.py) when the model or its
configuration fails: the test fails with one line naming what failed (pytest.fail, no traceback through
the harness), as ``streambench run`` says it. A run whose adapter failed on a stream fails the test (the
command exits 1 for it) instead of passing on the frames that remained."""

from __future__ import annotations

import pytest

from streambench.adapters.faulty import stream_fingerprint
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams
from tests.harness.integrations.test_pytest_plugin import _run

pytest_plugins = ["pytester"]

TEST = """
import streambench


def test_it(streambench_latency):
    run = streambench_latency({args})
    assert run.latency.n > 0
"""
SMALL = "streams=2, duration_s=1.0, warmup_frames=10"
DATA = {"num_streams": 2, "duration_s": 1.0, "max_event_segments": 1, "min_event_segments": 1, "seed": 0}
SECOND = make_streams(SyntheticConfig(**DATA))[1]
FAULTY = {
    "adapter": "faulty",
    "adapter_options": {
        "fault": "raise",
        "stream_fingerprint": stream_fingerprint(next(iter(SECOND.frames()))),
        "at_frame": 3,
    },
    "data": DATA,
    "engine": {"warmup_frames": 10},
}
"""A run whose second stream (by its first frame: in every worker, audit copies too) fails at frame 3."""


@pytest.mark.processes
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            f"config=streambench.RunConfig.model_validate({FAULTY!r})",
            "streambench_latency: the adapter failed on 1 stream(s): adapter 'faulty', stream 'syn-0001', "
            "frame 3: predict() raised RuntimeError: planted fault at frame 3 (the run: results/",
        ),
        (
            f'adapter="no_such_mod:X", {SMALL}',
            "streambench_latency: adapter 'no_such_mod:X': cannot import module 'no_such_mod'",
        ),
        (
            f'adapter="null", options={{"bogus": 1}}, {SMALL}',
            "streambench_latency: adapter 'null' has no option 'bogus'",
        ),
    ],
    ids=["a failed stream", "no such module", "no such option"],
)
def test_a_failure_fails_the_test_in_one_line(pytester: pytest.Pytester, args: str, says: str) -> None:
    pytester.makepyfile(test_case=TEST.format(args=args))
    result = _run(pytester, "-rf")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert says in text, text
    assert "Traceback" not in text and "streambench/harness/" not in text, text


def test_the_problems_are_those_streambench_run_exits_1_for() -> None:
    """A failed session audit and clocks that disagree fail the fixture's test too, as they make ``run``
    exit 1 (harness/runs/online.py); an honest run has none."""
    from types import SimpleNamespace

    from streambench.harness.integrations.pytest_plugin import run_problems

    check = SimpleNamespace(name="replay", passed=False, detail="stream 'syn-0001' frame 4 differs")
    passed = SimpleNamespace(name="order", passed=True, detail="")
    audit = SimpleNamespace(passed=False, checks=[check, passed])
    timing = SimpleNamespace(verdict="disagree", reason="the worker's clock stopped")
    failure = SimpleNamespace(message="adapter 'x', stream 's', frame 3: raised")
    result = SimpleNamespace(failures=[failure], session_audit=audit, host_timing=timing)
    assert run_problems(result) == [  # type: ignore[arg-type]
        "the adapter failed on 1 stream(s): adapter 'x', stream 's', frame 3: raised",
        "the session's audit failed (replay: stream 'syn-0001' frame 4 differs)",
        "the parent's clock disagrees with the worker's (the worker's clock stopped)",
    ]
    clean = SimpleNamespace(passed=True, checks=[])
    honest = SimpleNamespace(failures=[], session_audit=clean, host_timing=None)
    assert run_problems(honest) == []  # type: ignore[arg-type]


def test_an_interrupted_run_reaches_pytest_as_the_interruption() -> None:
    """Ctrl-C (or SIGTERM) during the fixture's run: the run writes what was measured and ends
    incomplete; the fixture raises ``KeyboardInterrupt`` (``RunInterrupted``), so pytest stops as it does
    for Ctrl-C anywhere. It returned the incomplete run, and the test passed on one stream of six."""
    from types import SimpleNamespace

    from streambench.harness.execution.executor import RunInterrupted
    from streambench.harness.integrations.pytest_plugin import raise_if_interrupted

    for signal, kind in (("KeyboardInterrupt", KeyboardInterrupt), ("signal SIGTERM", RunInterrupted)):
        reason = f"interrupted ({signal}) after 1 stream"
        result = SimpleNamespace(status="incomplete", incomplete_reason=reason)
        with pytest.raises(kind, match=r"stream; what was measured is kept: streambench run --resume r/x$"):
            raise_if_interrupted(result, "r/x")  # type: ignore[arg-type]
    for status, reason in (("complete", None), ("incomplete", "stopped at a failure (--on-error stop)")):
        raise_if_interrupted(SimpleNamespace(status=status, incomplete_reason=reason), "r/x")  # type: ignore[arg-type]
