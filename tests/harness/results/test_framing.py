"""Two measurements of different framing (harness/results/framing.py, issue 27 item 5): ``compare`` says so
and calls no regression of a per-frame figure unless forced; the A/B check names how two sides' data
differ."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np

from streambench.harness.datasets.provenance import Framing
from streambench.harness.execution.config import RunConfig
from streambench.harness.results.compare import FailOnSpec, compare_runs
from streambench.harness.results.framing import PER_FRAME_KEYS, framing_note, side_differences
from streambench.harness.results.headline import DataRecord, Figure, RunHeadline

AT_16K = Framing(frame_rate_hz=31.25, frame_samples=512, sample_rate_hz=16000)
AT_16K_HALF = Framing(frame_rate_hz=62.5, frame_samples=256, sample_rate_hz=16000)
AT_8K = Framing(frame_rate_hz=31.25, frame_samples=256, sample_rate_hz=8000)
UNITS = {"p50": "ms", "fps": "fps", "rtf": "x"}


def headline(run: str, framing: Framing | None, data_hash: str = "d" * 64, **values: float) -> RunHeadline:
    return RunHeadline(
        run=run,
        run_id=run,
        protocols=["online"],
        adapter="silero-vad",
        created_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        fingerprint="f" * 16,
        figures=[
            Figure(
                key=k,
                label=k,
                unit=UNITS[k],
                better="higher" if k == "fps" else "lower",
                value=v,  # type: ignore[arg-type]
            )
            for k, v in values.items()
        ],
        data=DataRecord(kind="audio_files", hash=data_hash, framing=framing),
    )


def test_the_note_names_both_framings_and_what_they_do_to_the_figures() -> None:
    note = framing_note(headline("a", AT_16K), headline("b", AT_16K_HALF))
    assert note == (
        "the frames differ: a has 512 samples at 16000 Hz (32 ms frames), b 256 samples at 16000 Hz "
        "(16 ms frames): per-frame latency, FPS and energy per frame measure frames of different signal "
        "(2x the frames per second), not only the models; RTF compares"
    )
    same_period = framing_note(headline("a", AT_16K), headline("b", AT_8K))
    assert same_period is not None and "the same frame period, 512 against 256 samples a frame" in same_period
    assert framing_note(headline("a", AT_16K), headline("b", AT_16K)) is None
    assert framing_note(headline("a", None), headline("b", AT_8K)) is None  # an older index entry


def test_compare_notes_the_framing_and_calls_no_per_frame_regression_unless_forced() -> None:
    # the case: half-size frames read as "p50 -47.8 %, FPS +129.5 %"; here a per-frame figure moved
    # the wrong way (p50 +60 %) only because the frames doubled, while RTF is unchanged
    base = headline("a", AT_16K, "a" * 64, p50=0.40, fps=2400.0, rtf=0.0128)
    head = headline("b", AT_16K_HALF, "b" * 64, p50=0.64, fps=1500.0, rtf=0.0128)
    rng = np.random.default_rng(0)
    base_ns, head_ns = rng.normal(400_000, 5_000, 400), rng.normal(640_000, 5_000, 400)
    spec = FailOnSpec.parse("p50:+5%,fps:-5%,rtf:+5%")
    comparison = compare_runs(base, head, spec, base_ns, head_ns)
    assert comparison.data_note is not None and "the frames differ: a has 512 samples" in comparison.data_note
    assert comparison.regressions == []
    p50 = next(c for c in comparison.changes if c.key == "p50")
    assert p50.verdict.startswith("not called (") and "the frames differ" in p50.verdict
    assert comparison.refusal is not None and "(--force calls it)" in comparison.refusal
    forced = compare_runs(base, head, spec, base_ns, head_ns, force=True)
    assert set(forced.regressions) == {"p50", "fps"} and {"p50", "fps"} <= PER_FRAME_KEYS
    assert "rtf" not in PER_FRAME_KEYS


def test_side_differences_names_the_framing_then_any_other_data_setting() -> None:
    def run(**data: object) -> RunConfig:
        return RunConfig.model_validate({"data": {"kind": "audio_files", "directory": "speech", **data}})

    assert side_differences(run(), run()) is None
    framing = side_differences(run(), run(frame_samples=256))
    assert framing is not None and framing.startswith(
        "the frames differ: base has 512 samples at 16000 Hz (32 ms frames), head 256 samples at 16000 Hz"
    )
    other = side_differences(run(), run(directory="other", min_overlap=0.3))
    assert other == (
        "base and head run different data (data.directory 'speech' vs 'other', data.min_overlap 0.5 vs 0.3): "
        "the gate would compare the models on different streams"
    )
    labelled = side_differences(run(), run(frame_samples=256), labels=("A", "B"))
    assert labelled is not None and "A has 512 samples" in labelled and ", B 256 samples" in labelled
