"""Tests of the causality protocol (protocols/causality.py): the pure judges, on hand-built recordings,
and the whole check set on real engine runs of the reference models and the planted offenders."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from streambench.adapters.contract import Stream, StreamingAdapter
from streambench.adapters.offenders import (
    CachingAdapter,
    CachingOptions,
    LeakyResetAdapter,
    LeakyResetOptions,
    OffByOneMaskAdapter,
    OffByOneMaskOptions,
    OffenderOptions,
    PeekingAdapter,
    sequence_gradient_support,
)
from streambench.adapters.offenders.rounding_cache import RoundingCacheAdapter, RoundingCacheOptions
from streambench.adapters.reference import (
    CausalReferenceAdapter,
    LookaheadOptions,
    LookaheadReferenceAdapter,
    default_classes,
)
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.runs.causality.caching import control_share, unseen_control
from streambench.harness.runs.causality.checks import nudge
from streambench.harness.runs.causality.protocol import occlude
from streambench.protocols.causality import (
    CausalityConfig,
    CheckResult,
    compare_prefix,
    compare_recordings,
    judge_caching,
    judge_gradient,
    plan_gradient,
    plan_occlusion,
    summarize,
)
from streambench.protocols.recording import StreamRecording

CLASSES = default_classes()


# ---------------------------------------------------------------------------------------------- helpers


def recording(
    emitted: list[int], refers: list[int], scores: list[list[float]], num_frames: int = 10, sid: str = "s"
) -> StreamRecording:
    times = (np.arange(num_frames, dtype=np.int64) + 1) * 100_000_000
    return StreamRecording(
        stream_id=sid,
        role="test",
        t0_ns=0,
        segment_length_ns=None,
        frame_times_ns=times,
        labels=np.zeros((num_frames, 2), dtype=bool),
        latency_ns=np.zeros(num_frames, dtype=np.int64),
        emitted_at=np.asarray(emitted, dtype=np.int64),
        refers_to=np.asarray(refers, dtype=np.int64),
        scores=np.asarray(scores, dtype=np.float32).reshape(len(emitted), 2),
    )


def run(adapter: StreamingAdapter, stream: Stream) -> StreamRecording:
    if isinstance(adapter, PeekingAdapter):
        PeekingAdapter.leak(stream.frames())  # the back door, filled as the offender expects
    return Engine(adapter, EngineConfig(warmup_frames=0)).run_stream(stream)


ADAPTERS: dict[str, Callable[[], StreamingAdapter]] = {
    "reference-causal": CausalReferenceAdapter,
    "reference-lookahead": lambda: LookaheadReferenceAdapter(LookaheadOptions(lookahead_frames=3)),
    "reference-lookahead-provisional": lambda: LookaheadReferenceAdapter(
        LookaheadOptions(lookahead_frames=3, emit_provisional=True)
    ),
    "peeking": lambda: PeekingAdapter(OffenderOptions(classes=CLASSES)),
    "offbyone-mask": lambda: OffByOneMaskAdapter(OffByOneMaskOptions(classes=CLASSES)),
    "leaky-reset": lambda: LeakyResetAdapter(LeakyResetOptions(classes=CLASSES)),
    "caching": lambda: CachingAdapter(CachingOptions(classes=CLASSES, miss_cost_ms=0.0)),
}


@pytest.fixture(autouse=True)
def _no_leak() -> Any:
    yield
    PeekingAdapter.unleak()


@pytest.fixture(scope="module")
def streams() -> list[Stream]:
    config = SyntheticConfig(
        num_streams=3, duration_s=2.0, min_event_segments=1, max_event_segments=2, seed=0
    )
    return make_streams(config)


# ----------------------------------------------------------------------------------------- config, plans


def test_config_defaults_and_validation() -> None:
    config = CausalityConfig()
    assert config.cuts is None and config.num_cuts == 3 and config.cut_seed is None  # random cuts
    assert config.streams == 3
    assert config.tolerance == 0.0 and config.caching_ratio == 0.5
    with pytest.raises(ValidationError):
        CausalityConfig(cuts=(1.0,))
    with pytest.raises(ValidationError):
        CausalityConfig(occluders=("blur",))


def test_plan_occlusion_fixed_fractions() -> None:
    config = CausalityConfig(cuts=(0.25, 0.5, 0.75))
    assert plan_occlusion(100, config) == [25, 50, 75]
    assert plan_occlusion(50, config) == [12, 25, 37]
    assert plan_occlusion(2, config) == [0]  # clipped to T - 2, de-duplicated
    assert plan_occlusion(1, config) == []


def test_plan_occlusion_random_cuts_are_anywhere_and_differ_per_stream_and_seed() -> None:
    """A model must not be able to learn where the audit looks: the cuts are drawn per stream and per
    run (seed), anywhere in [0, T - 2], and the same seed draws the same cuts (the result records it)."""
    config = CausalityConfig(num_cuts=4)
    plans = {(seed, k): plan_occlusion(250, config, seed, k) for seed in range(50) for k in range(3)}
    for cuts in plans.values():
        assert len(cuts) == 4 == len(set(cuts)) and cuts == sorted(cuts)
        assert all(0 <= c <= 248 for c in cuts)
    assert plan_occlusion(250, config, 7, 1) == plans[7, 1]  # reproducible from the recorded seed
    assert len({tuple(c) for c in plans.values()}) == len(plans)  # no two streams or runs alike
    used = {c for cuts in plans.values() for c in cuts}
    assert min(used) < 10 and max(used) > 238 and len(used) > 200  # not fractions: the whole stream
    assert plan_occlusion(3, config, 0) == [0, 1]  # at most T - 1 distinct cuts
    assert plan_occlusion(1, config, 0) == []


def test_plan_gradient() -> None:
    assert plan_gradient(10, CausalityConfig(sampled_t=4)) == [0, 3, 5, 8]
    assert plan_gradient(3, CausalityConfig(sampled_t=8)) == [0, 1]
    assert plan_gradient(1, CausalityConfig()) == []


# ------------------------------------------------------------------------------------ pure comparisons


def test_compare_prefix_identical_prefix_passes() -> None:
    clean = recording([0, 1, 2, 3], [0, 1, 2, 3], [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]])
    occluded = recording([0, 1, 2, 3], [0, 1, 2, 3], [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.1, 0.9]])
    result = compare_prefix(clean, occluded, cut=2)
    assert result.passed and result.first_frame is None and result.max_difference == 0.0
    failed = compare_prefix(clean, occluded, cut=3)
    assert not failed.passed
    assert failed.first_frame == 3 and failed.first_stream == "s"
    assert failed.max_difference == pytest.approx(0.5)


def test_compare_prefix_tolerance() -> None:
    clean = recording([0, 1], [0, 1], [[0.5, 0.5], [0.5, 0.5]])
    occluded = recording([0, 1], [0, 1], [[0.5, 0.5], [0.5001, 0.4999]])
    assert not compare_prefix(clean, occluded, cut=1).passed
    result = compare_prefix(clean, occluded, cut=1, tolerance=1e-3)
    assert result.passed and result.max_difference == pytest.approx(1e-4, rel=1e-2)


def test_compare_prefix_structural_mismatch() -> None:
    clean = recording([1, 2, 3], [0, 1, 2], [[0.5, 0.5]] * 3)
    extra = recording([1, 2, 2, 3], [0, 1, 2, 2], [[0.5, 0.5]] * 4)  # an extra refined label at frame 2
    result = compare_prefix(clean, extra, cut=2)
    assert not result.passed and result.first_frame == 2 and math.isinf(result.max_difference)
    other_ref = recording([1, 2, 3], [0, 0, 2], [[0.5, 0.5]] * 3)
    assert compare_prefix(clean, other_ref, cut=5).first_frame == 2
    # a score difference earlier than the structural one is reported first
    earlier = recording([1, 2, 2, 3], [0, 1, 2, 2], [[0.4, 0.6]] + [[0.5, 0.5]] * 3)
    result = compare_prefix(clean, earlier, cut=3)
    assert result.first_frame == 1 and result.max_difference == pytest.approx(0.1)


def test_compare_recordings_first_frame() -> None:
    a = recording([0, 1, 2, 3], [0, 1, 2, 3], [[0.5, 0.5]] * 4)
    b = recording([0, 1, 2, 3], [0, 1, 2, 3], [[0.5, 0.5]] * 2 + [[0.3, 0.7]] * 2)
    result = compare_recordings(a, b, name="state_leak")
    assert result.name == "state_leak" and not result.passed and result.first_frame == 2
    missing = recording([0, 1, 2], [0, 1, 2], [[0.5, 0.5]] * 3)
    result = compare_recordings(a, missing)
    assert not result.passed and result.first_frame == 3 and math.isinf(result.max_difference)
    assert compare_recordings(a, a).passed


def test_judge_gradient() -> None:
    causal = np.tril(np.ones((6, 6), dtype=bool))[[1, 4]]
    assert judge_gradient(causal, [1, 4]).passed
    leaky = causal.copy()
    leaky[1, 5] = True
    leaky[0, 3] = True
    result = judge_gradient(leaky, [1, 4], stream_id="x")
    assert not result.passed
    assert (result.first_frame, result.first_source, result.first_stream) == (1, 3, "x")
    with pytest.raises(ValueError):
        judge_gradient(causal, [1])


def test_judge_caching() -> None:
    control = np.full(20, 2_000_000)
    honest = [(np.full(20, 1_900_000), control)] * 5
    assert judge_caching(honest, 0.5).passed
    cache = [(np.full(20, 10_000), control)] * 5
    result = judge_caching(cache, 0.5, stream_id="s")
    assert not result.passed and result.first_stream == "s"
    assert result.max_difference == pytest.approx(200.0) and "p = 0.0312" in result.detail
    assert "repeat vs unseen control" in result.detail and "one-ulp" not in result.detail
    # the one-ulp copies are reported beside the verdict and never decide it
    hit = [(np.full(20, 10_000), np.full(20, 10_000))] * 5  # a copy served from the cache
    tolerant = judge_caching(cache, 0.5, stream_id="s", ulp_copies=hit)
    assert not tolerant.passed and tolerant.max_difference == pytest.approx(200.0)
    assert "one-ulp copies (the former control, not judged): median speed-up 1.00x" in tolerant.detail
    assert "a cache tolerant to small input changes" in tolerant.detail
    exact = judge_caching(cache, 0.5, ulp_copies=cache)  # an exact key misses the copies as well
    assert not exact.passed and "tolerant" not in exact.detail and "speed-up 200.00x, repeat" in exact.detail
    assert judge_caching(honest, 0.5, ulp_copies=cache).passed  # copies alone never fail it


def test_judge_caching_under_noise_drift_and_too_few_rounds() -> None:
    """A noisy machine must not make a cache of an honest model, nor hide a real one."""
    rng = np.random.default_rng(0)
    base = 1_000_000
    # one control slowed 5x by a burst of load, four calm rounds: a majority is not significant
    burst = [(np.full(30, base), np.full(30, base * (5 if i == 2 else 1))) for i in range(5)]
    assert judge_caching(burst, 0.5).passed
    # load drifting up 4x over the rounds hits repeat and control of a round alike: no cache
    drift = [(np.full(30, base * 4**i), np.full(30, base * 4**i * 1.05)) for i in range(5)]
    assert judge_caching(drift, 0.5).passed

    # a heavy-tailed machine (lognormal per frame, sigma 1; one run in ten 3x slower from load) on an
    # honest model: 200 audits of the default rounds, no alarm
    def noisy_round(speed: float) -> tuple[np.ndarray, np.ndarray]:
        load = rng.choice([1.0, 3.0], size=2, p=[0.9, 0.1])  # each run of the pair its own load
        return (
            rng.lognormal(0, 1, 125) * base * load[0] / speed,
            rng.lognormal(0, 1, 125) * base * load[1],
        )

    rounds = CausalityConfig().caching_rounds
    false = sum(not judge_caching([noisy_round(1.0) for _ in range(rounds)]).passed for _ in range(200))
    assert false == 0
    # a cache that saves 3x, under the same noise
    caught = sum(not judge_caching([noisy_round(3.0) for _ in range(rounds)]).passed for _ in range(200))
    assert caught >= 180  # a 3x load burst on a repeat can mask a round's hit (measured: 95 % caught)
    # rounds that could never reach the level are refused, not silently a pass
    with pytest.raises(ValidationError, match="caching_rounds=3 can never reach"):
        CausalityConfig(caching_rounds=3)
    with pytest.raises(ValueError, match="at least one round"):
        judge_caching([])


def test_summarize() -> None:
    ok = CheckResult(name="a", passed=True)
    bad = CheckResult(name="b", passed=False, first_frame=3)
    report = summarize([ok, bad])
    assert not report.passed and report.failed == ("b",)
    assert summarize([ok]).passed


# ------------------------------------------------------------------------- the checks on engine runs


def occlusion_results(make: Callable[[], StreamingAdapter], streams: list[Stream]) -> list[CheckResult]:
    config = CausalityConfig()
    results = []
    for k, stream in enumerate(streams[:2]):
        clean = run(make(), stream)
        for cut in plan_occlusion(stream.num_frames, config, 0, k):
            for occluder in config.occluders:
                donor = streams[(k + 1) % len(streams)]
                occluded = run(make(), occlude(stream, cut, occluder, donor, seed=config.noise_seed))
                result = compare_prefix(clean, occluded, cut, config.tolerance)
                results.append(result.model_copy(update={"detail": f"{occluder}: {result.detail}"}))
    return results


@pytest.mark.parametrize("name", [n for n in ADAPTERS if n != "peeking"])
def test_occlusion_passes_causal_adapters(name: str, streams: list[Stream]) -> None:
    results = occlusion_results(ADAPTERS[name], streams)
    assert len(results) == 2 * 3 * 3
    assert all(r.passed for r in results), [r for r in results if not r.passed]


def test_occlusion_does_change_the_future(streams: list[Stream]) -> None:
    # the occluded runs really differ after the cut: the first full-recording difference is cut + 1
    stream = streams[0]
    clean = run(CausalReferenceAdapter(), stream)
    occluded = run(CausalReferenceAdapter(), occlude(stream, 20, "zeros"))
    result = compare_recordings(clean, occluded)
    assert not result.passed and result.first_frame == 21
    lookahead = LookaheadOptions(lookahead_frames=3)
    clean = run(LookaheadReferenceAdapter(lookahead), stream)
    occluded = run(LookaheadReferenceAdapter(lookahead), occlude(stream, 20, "zeros"))
    result = compare_recordings(clean, occluded)  # emitted at 21, labelling frame 18: still causal
    assert not result.passed and result.first_frame == 21


def test_occlusion_catches_peeking_at_the_cut(streams: list[Stream]) -> None:
    results = occlusion_results(ADAPTERS["peeking"], streams)
    assert results and not any(r.passed for r in results)
    cuts = [plan_occlusion(s.num_frames, CausalityConfig(), 0, k) for k, s in enumerate(streams[:2])]
    assert [r.first_frame for r in results] == [c for plan in cuts for c in plan for _ in range(3)]
    assert {r.first_stream for r in results} == {streams[0].stream_id, streams[1].stream_id}
    assert all(0 < r.max_difference < math.inf for r in results)


def state_leak(make: Callable[[], StreamingAdapter], streams: list[Stream]) -> list[CheckResult]:
    """Stream 0 fresh vs after the others; stream 0 after a double reset vs a single one."""
    target = streams[0]
    fresh = run(make(), target)
    adapter = make()
    for other in streams[1:]:
        run(adapter, other)
    after = run(adapter, target)
    twice = make()
    twice.reset_state()
    twice.reset_state()
    reset_twice = run(twice, target)  # the engine resets once more
    return [
        compare_recordings(fresh, after, name="state_leak"),
        compare_recordings(fresh, reset_twice, name="reset_idempotent"),
    ]


@pytest.mark.parametrize("name", [n for n in ADAPTERS if n != "leaky-reset"])
def test_state_leak_passes_clean_resets(name: str, streams: list[Stream]) -> None:
    results = state_leak(ADAPTERS[name], streams)
    assert all(r.passed for r in results), results


def test_state_leak_catches_leaky_reset(streams: list[Stream]) -> None:
    leak, idempotent = state_leak(ADAPTERS["leaky-reset"], streams)
    assert not leak.passed and leak.first_frame == 0 and leak.first_stream == streams[0].stream_id
    assert 0 < leak.max_difference < math.inf
    assert idempotent.passed  # resetting twice is harmless: the leak only shows across streams


def sequence_recording(
    adapter: OffByOneMaskAdapter, stream: Stream, like: StreamRecording
) -> StreamRecording:
    preds = adapter.predict_sequence(list(stream.frames()))
    refs = np.array([p.refers_to for p in preds], dtype=np.int64)
    return dataclasses.replace(
        like, emitted_at=refs, refers_to=refs.copy(), scores=np.stack([p.scores for p in preds])
    )


@pytest.mark.parametrize("offset", [0, 1])
def test_gradient_flow_and_sequence_equivalence(offset: int, streams: list[Stream]) -> None:
    stream = streams[0]
    adapter = OffByOneMaskAdapter(OffByOneMaskOptions(classes=CLASSES, mask_offset=offset))
    assert "sequence" in adapter.info.capabilities
    inputs = adapter.stack(list(stream.frames()))
    sampled = plan_gradient(stream.num_frames, CausalityConfig(sampled_t=5))
    support = sequence_gradient_support(adapter.sequence_outputs, inputs, sampled)
    gradient = judge_gradient(support, sampled, stream_id=stream.stream_id)
    streamed = run(adapter, stream)
    equivalence = compare_recordings(
        streamed, sequence_recording(adapter, stream, streamed), tolerance=1e-5, name="stream_sequence"
    )
    t = np.arange(stream.num_frames)
    expected = t[None, :] <= np.asarray(sampled)[:, None] + offset
    np.testing.assert_array_equal(support, expected)
    if offset == 0:
        assert gradient.passed and equivalence.passed
    else:
        assert not gradient.passed
        assert (gradient.first_frame, gradient.first_source) == (0, 1)
        assert not equivalence.passed and equivalence.first_frame == 0


def test_gradient_flow_names_the_first_sampled_t(streams: list[Stream]) -> None:
    adapter = OffByOneMaskAdapter(OffByOneMaskOptions(classes=CLASSES))
    inputs = adapter.stack(list(streams[1].frames()))
    support = sequence_gradient_support(adapter.sequence_outputs, inputs, [7, 3, 30])
    result = judge_gradient(support, [7, 3, 30])
    assert (result.first_frame, result.first_source) == (3, 4)


def caching_audit(
    adapter: StreamingAdapter, streams: list[Stream], rounds: int = 5
) -> tuple[CheckResult, CheckResult]:
    """The audit's rounds on an engine in this process (stream A once, then per round a repeat, its unseen
    control and a one-ulp copy): the verdict on the unseen controls, and the same repeats judged on the
    one-ulp copies (the former control)."""
    engine = Engine(adapter, EngineConfig(warmup_frames=20))
    engine.warm_up(streams[2])
    stream = streams[0]
    if isinstance(adapter, PeekingAdapter):
        PeekingAdapter.leak(stream.frames())
    first = engine.run_stream(stream)
    unseen, copies = [], []
    for r in range(rounds):
        repeat = engine.run_stream(stream)
        mixed = unseen_control(stream, streams[1 + r % 2], control_share(r, rounds), r + 1, rounds + r + 1)
        control = engine.run_stream(mixed)
        copy = engine.run_stream(nudge(stream, r + 1))
        assert compare_recordings(first, repeat).passed  # same outputs, only the timing differs
        unseen.append((repeat.latency_ns, control.latency_ns))
        copies.append((repeat.latency_ns, copy.latency_ns))
    ratio = CausalityConfig().caching_ratio
    return judge_caching(unseen, ratio, stream.stream_id), judge_caching(copies, ratio, stream.stream_id)


@pytest.mark.parametrize("name", [n for n in ADAPTERS if n not in ("caching", "leaky-reset")])
def test_caching_audit_passes_honest_timing(name: str, streams: list[Stream]) -> None:
    result, _ = caching_audit(ADAPTERS[name](), streams)
    assert result.passed, result.detail


def test_a_partial_cache_hides_from_the_median_but_not_from_the_lower_quartile(streams: list[Stream]) -> None:
    """A cache that keeps 40 % of the payloads: the median frame of a repeat is still a miss, so a median
    audit passes it; the audit's lower quartile (CausalityConfig.caching_quantile) catches it."""
    adapter = CachingAdapter(CachingOptions(classes=CLASSES, miss_cost_ms=0.5, cache_share=0.4))
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    stream = streams[0]
    engine.run_stream(stream)
    rounds, shares = [], []
    for r in range(8):
        before = adapter.hits
        repeat = engine.run_stream(stream)
        shares.append((adapter.hits - before) / stream.num_frames)
        control = unseen_control(stream, streams[1 + r % 2], control_share(r, 8), r + 1, 9 + r)
        rounds.append((repeat.latency_ns, engine.run_stream(control).latency_ns))
    assert all(0.25 < share < 0.5 for share in shares), shares  # a partial cache: under half the frames
    assert judge_caching(rounds, quantile=0.5).passed  # the median misses it
    quartile = judge_caching(rounds, quantile=CausalityConfig().caching_quantile)
    assert not quartile.passed and quartile.max_difference > 2.0, quartile.detail


def test_caching_audit_catches_caching_adapter(streams: list[Stream]) -> None:
    adapter = CachingAdapter(CachingOptions(classes=CLASSES))
    result, former = caching_audit(adapter, streams)
    assert not result.passed and result.first_stream == streams[0].stream_id
    assert result.max_difference > 10.0, result.detail
    assert not former.passed  # an exact key: the one-ulp copies catch it as well


def test_a_cache_that_rounds_its_key_passes_the_one_ulp_control_and_fails_the_unseen_one(
    streams: list[Stream],
) -> None:
    """Issue 24, item 4: a cache tolerant to a few ulps (its key: the payload rounded to 3 decimals) serves
    the one-ulp copies from the cache, so the former control passed it; every unseen control is a miss,
    so the audit catches it."""
    adapter = RoundingCacheAdapter(RoundingCacheOptions(classes=CLASSES, miss_cost_ms=0.5))
    hits: dict[str, list[float]] = {"ulp": [], "unseen": []}
    stream = streams[0]
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    engine.run_stream(stream)
    for r in range(3):
        for kind, variant in (
            ("ulp", nudge(stream, r + 1)),
            ("unseen", unseen_control(stream, streams[1 + r % 2], control_share(r, 3), r + 1, 4 + r)),
        ):
            before = adapter.hits
            engine.run_stream(variant)
            hits[kind].append((adapter.hits - before) / stream.num_frames)
    assert min(hits["ulp"]) > 0.9 and max(hits["unseen"]) == 0.0, hits
    verdict, former = caching_audit(
        RoundingCacheAdapter(RoundingCacheOptions(classes=CLASSES, miss_cost_ms=0.5)), streams
    )
    assert former.passed, former.detail  # the former control is fooled
    assert not verdict.passed and verdict.max_difference > 2.0, verdict.detail


def test_an_infinite_difference_survives_the_json_round_trip() -> None:
    check = CheckResult(
        name="occlusion", passed=False, first_stream="s", first_frame=3, max_difference=math.inf
    )
    report = summarize([check])
    text = report.model_dump_json()
    assert '"max_difference":null' in text and "Infinity" not in text  # strict JSON (issue 25 item 16)
    assert type(report).model_validate_json(text) == report


def test_what_each_check_measured_is_named_in_the_cli_table() -> None:
    """The caching audit's figure is a speed-up, not a score difference (issue 17): the CLI's causality
    table and the report name it so, and an infinite marker is not printed as a number."""
    import io

    from rich.console import Console

    from streambench.harness.results.summary import print_causality
    from streambench.protocols.causality import CheckResult, measured_label, summarize

    report = summarize(
        [
            CheckResult(name="occlusion", passed=True, max_difference=0.0),
            CheckResult(name="caching", passed=False, max_difference=3.5, detail="cache"),
            CheckResult(name="gradient_flow", passed=False, max_difference=math.inf, detail="leak"),
        ]
    )
    assert measured_label("caching", 3.5) == "repeat speed-up 3.5×"
    assert measured_label("occlusion", 0.0) == "max |Δscore| 0"
    buffer = io.StringIO()
    print_causality(Console(file=buffer, width=200), report)
    table = buffer.getvalue()
    assert "repeat speed-up 3.5×" in table and "max |Δscore| 0" in table
    assert "no finite figure: see the detail" in table and "inf" not in table.split("gradient_flow:")[0]
