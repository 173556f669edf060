"""streambench as a pytest plugin: latency regression tests in a project's own CI.

Registered through the ``pytest11`` entry point
(``streambench = "streambench.harness.integrations.pytest_plugin"``), so any environment with streambench
installed has the ``streambench_latency`` fixture. A test calls it once::

    def test_my_model_latency(streambench_latency):
        run = streambench_latency(adapter="my_package.models:MyAdapter", streams=4, duration_s=2.0)
        assert run.f1_at(1000) > 0.5

It runs the adapter through the online protocol exactly like ``streambench run`` does (the runner's
:func:`streambench.harness.runner.execute_run`: threads applied, warm-up, one stream at a time, batch 1, every
``predict()`` timed by the engine with ``time.perf_counter_ns()``, then scored) and hands the result to
pytest-benchmark, so that its documented regression workflow works on adapters unchanged::

    pytest --benchmark-autosave                                   # record a baseline
    pytest --benchmark-compare --benchmark-compare-fail=median:10%  # fail when the median regressed

What goes where in pytest-benchmark's record (its documented API, pytest-benchmark 5.x):

- rounds: one round per scored frame; the round's duration is the engine's latency of that frame's
  ``predict()`` (warm-up frames are not rounds; frames a paced run dropped are not rounds), so min, max,
  mean, median, IQR and ``--benchmark-compare-fail`` are statistics of the per-frame latency.
- ``benchmark.extra_info["streambench"]``: the latency percentiles as the online protocol computed them
  (numpy's linear method, with their sample count), FPS, RTF, the F1@Δt / Acc@Δt curve (Strict, frame
  units), frame accuracy, segment F1, the headline warnings, the run id and the environment fingerprint.
- machine info: the ``pytest_benchmark_update_machine_info`` hook adds ``machine_info["streambench"]``:
  the environment fingerprint (:func:`streambench.harness.instruments.manifest.fingerprint`) and the manifest
  items it hashes (nothing that changes between two runs on the same machine, so pytest-benchmark's own
  "machine_info is different" warning keeps its meaning).
- comparing: the ``pytest_benchmark_compare_machine_info`` hook refuses (usage error, before any test
  runs) to compare against saved streambench benchmarks whose fingerprint differs from this machine's
  (DESIGN.md "Results": the CI latency gate refuses runs whose environment fingerprints differ);
  ``--streambench-fingerprint=warn`` downgrades that to a warning.

How the engine's samples become rounds, and the caveat. pytest-benchmark computes every statistic from
the list of per-round durations it measured itself with its timer around the benchmarked callable. The
engine must stay the only code that calls ``predict()`` (DESIGN.md "Layout"), and its lean loop times
whole streams, so no round can time one frame's ``predict()`` itself. The plugin therefore uses two
documented pieces of pytest-benchmark: the ``benchmark`` marker's ``timer`` option (a per-test timer,
added by this plugin to every test that uses the fixture) and ``benchmark.pedantic(target, rounds=N,
iterations=1)``. After the run, the per-test timer is loaded with the engine's N per-frame latencies
and replays them as a virtual clock: round k's two readings are ``T_k`` and ``T_k + latency_k``, so the
duration pytest-benchmark records for round k is the engine-measured latency of frame k (to within
float rounding, ~1e-16 s). The target is a no-op; nothing is timed twice and nothing is made up.
Caveat: this relies on pedantic reading the timer exactly once before and once after the target per
round (true of pytest-benchmark 4 and 5). The replay clock counts its readings and the fixture fails
the test loudly if pytest-benchmark read it any other number of times, rather than record wrong
rounds. The saved JSON names the timer ``streambench.harness.pytest_plugin.streambench_engine_replay``, which
says where the durations came from. (The alternative, appending the samples to the fixture's stats object
through ``BenchmarkFixture._make_stats``, uses private API and was not taken.) One run per test:
pytest-benchmark keeps one benchmark per test, so the fixture can be called once; parametrize for more.
``--benchmark-timer``, ``--benchmark-warmup`` and the round-calibration options do not apply (the engine
has its clock and its own warm-up); ``--benchmark-disable`` still runs and scores the adapter,
``--benchmark-skip`` skips the test. pytest-benchmark's statistics treat rounds as independent; frames
of a stream are not (DESIGN.md "Results"), so its stddev and outlier columns are descriptive only, and
``--benchmark-compare-fail`` is a plain threshold on one statistic, not streambench's own gate (effect
and rank test over interleaved repeats).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

if TYPE_CHECKING:
    from streambench.harness.execution.config import RunConfig
    from streambench.harness.results.files import RunResult
    from streambench.protocols.metrics import LatencySummary
    from streambench.protocols.online import Mode, OnlineScore, Unit

__all__ = ["LatencyRun", "ReplayTimer", "StreambenchLatency", "streambench_latency"]

FIXTURE = "streambench_latency"
EXTRA_KEY = "streambench"
TIMER_NAME = "streambench_engine_replay"
ROUNDS_SOURCE = (
    "one round per scored frame: the streambench engine's time.perf_counter_ns() latency of predict(), "
    "replayed to pytest-benchmark by a virtual timer (warm-up frames excluded)"
)
_TIMER_KEY = pytest.StashKey["ReplayTimer"]()
_MACHINE_KEY = pytest.StashKey[dict[str, Any]]()


class ReplayTimer:
    """A virtual clock that replays engine-measured latencies to ``benchmark.pedantic``, one per round.

    Reading ``2k`` returns ``T_k`` (the sum of the first ``k`` latencies, in seconds); reading ``2k + 1``
    returns ``T_k + latency_k``. It advances only during the replayed calls and never past the last
    latency: one reading too many raises instead of inventing a duration.
    """

    def __init__(self) -> None:
        self.__name__ = TIMER_NAME  # what pytest-benchmark records as the timer's name
        self._latency_ns: list[int] = []
        self._elapsed_ns = 0
        self.reads = 0

    def load(self, latency_ns: np.ndarray) -> None:
        """Replay these latencies (ns), from the start."""
        self._latency_ns = [int(x) for x in latency_ns]
        self._elapsed_ns = 0
        self.reads = 0

    def __call__(self) -> float:
        k, end = divmod(self.reads, 2)
        if k >= len(self._latency_ns):
            raise RuntimeError(
                f"{TIMER_NAME}: read {self.reads + 1} times for {len(self._latency_ns)} rounds; "
                "pytest-benchmark's pedantic mode should read it once before and once after each round"
            )
        self.reads += 1
        if end:
            self._elapsed_ns += self._latency_ns[k]
        return self._elapsed_ns / 1e9


@dataclass(frozen=True)
class LatencyRun:
    """What one ``streambench_latency(...)`` call measured: the run's result and its per-frame latencies."""

    result: RunResult
    run_dir: Path
    latency_ns: np.ndarray
    """The benchmark's rounds: every scored frame's ``predict()`` latency in ns, streams in run order."""

    @property
    def metrics(self) -> OnlineScore:
        return self.result.metrics

    @property
    def latency(self) -> LatencySummary:
        """Latency percentiles over the scored frames (streambench.protocols.online_speed, numpy's linear
        method)."""
        return self.result.metrics.overall.speed.latency

    @property
    def fingerprint(self) -> str:
        return self.result.fingerprint

    def f1_at(self, delta_ms: float, mode: Mode = "strict", unit: Unit = "frame") -> float:
        """Micro F1@Δt of the scored streams (seed 004 §6.2.1), as ``OnlineScore.f1_at``."""
        return self.result.metrics.f1_at(delta_ms, mode, unit)


def run_config(
    adapter: str,
    options: Mapping[str, Any] | None,
    streams: int,
    duration_s: float,
    warmup_frames: int | None,
    output_dir: Path,
) -> RunConfig:
    """A small online run on the synthetic data set, events sized to fit streams of ``duration_s``;
    ``warmup_frames`` None: the engine's default (``EngineConfig.warmup_frames``, the one place it is set)."""
    from streambench.harness.datasets.synthetic import SyntheticConfig
    from streambench.harness.execution.config import RunConfig

    defaults = SyntheticConfig.model_fields
    segments = max(1, round(duration_s / defaults["segment_length_s"].default))
    longest = min(defaults["max_event_segments"].default, segments)
    data = {
        "num_streams": streams,
        "duration_s": duration_s,
        "max_event_segments": longest,
        "min_event_segments": min(defaults["min_event_segments"].default, longest),
    }
    return RunConfig.model_validate(
        {
            "adapter": adapter,
            "adapter_options": dict(options or {}),
            "data": data,
            "engine": {} if warmup_frames is None else {"warmup_frames": warmup_frames},
            "output_dir": output_dir,
        }
    )


def extra_info(result: RunResult, latency_ns: np.ndarray) -> dict[str, Any]:
    """The JSON-ready figures stored in ``benchmark.extra_info["streambench"]``."""
    metrics = result.metrics
    latency, speed = metrics.overall.speed.latency, metrics.overall.speed
    strict = metrics.overall.accuracy.curves["frame"]["strict"]
    return {
        "adapter": result.adapter,
        "adapter_options": result.adapter_options,
        "run_id": result.run_id,
        "fingerprint": result.fingerprint,
        "rounds": ROUNDS_SOURCE,
        "frames": int(latency_ns.size),
        "streams": len(result.streams["test"]),
        "warmup_frames": result.warmup.frames if result.warmup is not None else 0,
        "clock": result.clock.name,
        "latency_ms": {
            "n": latency.n,
            "mean": latency.mean_ms,
            "p50": latency.p50_ms,
            "p95": latency.p95_ms,
            "p99": latency.p99_ms,
            "max": latency.max_ms,
            "min": latency.min_ms,
            "percentile_method": latency.percentile_method,
        },
        "fps": latency.fps,
        "rtf": speed.rtf,
        "f1_strict": {f"{p.delta_ms:g}": p.f1_micro for p in strict},
        "acc_strict": {f"{p.delta_ms:g}": p.accuracy for p in strict},
        "frame_accuracy": metrics.overall.accuracy.frame_accuracy,
        "segment_f1_micro": metrics.overall.accuracy.segment_f1_micro,
        "warnings": list(metrics.headline.warnings),
    }


class StreambenchLatency:
    """The ``streambench_latency`` fixture's value: call it once to run and benchmark an adapter."""

    def __init__(self, benchmark: Any, timer: ReplayTimer, output_dir: Path) -> None:
        self.benchmark = benchmark
        self.timer = timer
        self.output_dir = output_dir
        self.used = False

    def __call__(
        self,
        adapter: str = "null",
        options: Mapping[str, Any] | None = None,
        *,
        streams: int = 4,
        duration_s: float = 2.0,
        warmup_frames: int | None = None,
        config: RunConfig | None = None,
    ) -> LatencyRun:
        """Run ``adapter`` through the online protocol and record its per-frame latencies as rounds.

        ``adapter``: a registry name or ``module:Class``; ``options``: its options (validated by its
        ``Options`` model); ``streams`` synthetic streams of ``duration_s`` seconds at 25 fps after
        ``warmup_frames`` warm-up frames (None: the engine's default, as ``streambench run``'s).
        ``config``: a complete :class:`streambench.harness.execution.config.RunConfig` instead (the other
        arguments are then ignored). The run is written under pytest's temporary directory
        (``run.run_dir``).
        """
        from streambench.harness.execution.adapter_errors import AdapterError
        from streambench.harness.execution.worker_errors import WorkerError
        from streambench.harness.runs.session import execute_run
        from streambench.protocols.online_speed import measured_latency

        if self.used:
            raise RuntimeError(
                f"{FIXTURE} can be called once per test (pytest-benchmark keeps one benchmark per test); "
                "parametrize the test to benchmark several adapters"
            )
        self.used = True
        failure: str | None = None
        try:
            if config is None:
                config = run_config(adapter, options, streams, duration_s, warmup_frames, self.output_dir)
            result, recordings, run_dir = execute_run(config)
        except (ValueError, AdapterError, WorkerError) as exc:  # the configuration, or every stream failed
            failure = f"{FIXTURE}: {exc}"
        if failure is not None:  # outside the except: no chained traceback through the harness
            pytest.fail(failure, pytrace=False)
        raise_if_interrupted(result, run_dir)
        problems = run_problems(result)
        if problems:  # as streambench run's exit 1: the frames left are not the model's latency
            pytest.fail(f"{FIXTURE}: {'; '.join(problems)} (the run: {run_dir})", pytrace=False)
        latency_ns = np.concatenate([measured_latency(r) for r in recordings if r.role == "test"])
        self.benchmark.extra_info[EXTRA_KEY] = extra_info(result, latency_ns)
        self.timer.load(latency_ns)
        self.benchmark.pedantic(_no_op, rounds=int(latency_ns.size), iterations=1, warmup_rounds=0)
        if self.benchmark.enabled and self.timer.reads != 2 * latency_ns.size:
            raise RuntimeError(
                f"{TIMER_NAME} was read {self.timer.reads} times for {latency_ns.size} rounds (expected "
                f"{2 * latency_ns.size}): this pytest-benchmark version times pedantic rounds differently, "
                "so its rounds would not be the engine's per-frame latencies"
            )
        return LatencyRun(result=result, run_dir=run_dir, latency_ns=latency_ns)


def raise_if_interrupted(result: RunResult, run_dir: Path | str) -> None:
    """A run that Ctrl-C (or SIGTERM) interrupted ends incomplete, what was measured written: raise the
    interruption (``KeyboardInterrupt``; ``RunInterrupted`` for SIGTERM) so pytest stops, as
    ``streambench.run`` does (harness/api), instead of benchmarking the streams that finished."""
    from streambench.harness.execution.executor import RunInterrupted
    from streambench.harness.sweep.interrupts import interrupted_by

    reason = result.incomplete_reason or "" if result.status == "incomplete" else ""
    if reason.startswith("interrupted"):
        why = f"{reason}; what was measured is kept: streambench run --resume {run_dir}"
        raise RunInterrupted(why) if interrupted_by(why) == "SIGTERM" else KeyboardInterrupt(why)


def run_problems(result: RunResult) -> list[str]:
    """What makes ``streambench run`` exit 1 for a run (harness/runs/online.py ``print_result``): the
    adapter's failures (each naming the adapter, stream and frame), a failed session audit, the parent's
    clock disagreeing with the worker's."""
    problems = []
    if result.failures:
        shown = "; ".join(f.message for f in result.failures)
        problems.append(f"the adapter failed on {len(result.failures)} stream(s): {shown}")
    audit = result.session_audit
    if audit is not None and audit.passed is False:
        failed = [f"{c.name}: {c.detail}" if c.detail else c.name for c in audit.checks if not c.passed]
        problems.append(f"the session's audit failed ({'; '.join(failed)})")
    if result.host_timing is not None and result.host_timing.verdict == "disagree":
        problems.append(f"the parent's clock disagrees with the worker's ({result.host_timing.reason})")
    return problems


def _no_op() -> None:
    return None


@pytest.fixture
def streambench_latency(request: pytest.FixtureRequest, benchmark: Any, tmp_path: Path) -> StreambenchLatency:
    """Run an adapter through the online protocol inside pytest-benchmark (see the module docstring)."""
    timer = request.node.stash.get(_TIMER_KEY, None)
    if timer is None:  # pragma: no cover - every item using the fixture gets one at collection
        raise RuntimeError(f"{FIXTURE}: the test item has no replay timer (was it collected by pytest?)")
    return StreambenchLatency(benchmark, timer, tmp_path)


# --- hooks ---------------------------------------------------------------------------------------


@pytest.fixture
def streambench_ab(request: pytest.FixtureRequest) -> Any:
    """The interleaved A/B latency gate (harness/integrations/pytest_ab.py): call it with the head's
    adapter, or with the run configuration ``ab --config`` takes (``config=``: data, engine, threads); fails
    the test on a regression."""
    from streambench.harness.integrations.pytest_ab import make_gate

    return make_gate(request)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("streambench", "streambench latency benchmarks")
    group.addoption(
        "--streambench-fingerprint",
        choices=("refuse", "warn"),
        default="refuse",
        help="when --benchmark-compare meets saved streambench benchmarks from another environment "
        "fingerprint: refuse to compare (default) or only warn",
    )
    group.addoption(
        "--streambench-base-path",
        default=None,
        help="streambench_ab: the base's own code, first for every import its adapter makes (a checkout of "
        "the base commit at its import root); default: the working directory, as the head",
    )
    group.addoption(
        "--streambench-head-path",
        default=None,
        help="streambench_ab: the head's own code, as --streambench-base-path (default: the working "
        "directory)",
    )
    group.addoption(
        "--streambench-allow-inconclusive",
        action="store_true",
        help="streambench_ab: let a gate that could not decide within its budget pass with a warning "
        "(default: the test fails)",
    )
    group.addoption(
        "--streambench-strict",
        action="store_true",
        help="streambench_ab: fail the test when the gate is inconclusive (now the default; kept for old "
        "commands)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every test that uses the fixture its replay timer through the ``benchmark`` marker's
    documented ``timer`` option (kept with the test's own benchmark marker options, if any)."""
    for item in items:
        if FIXTURE not in getattr(item, "fixturenames", ()):
            continue
        timer = ReplayTimer()
        item.stash[_TIMER_KEY] = timer
        own = item.get_closest_marker("benchmark")
        kwargs = dict(own.kwargs) if own is not None else {}
        kwargs["timer"] = timer
        item.add_marker(pytest.mark.benchmark(**kwargs), append=False)


def machine_entry(config: pytest.Config) -> dict[str, Any]:
    """This machine's fingerprint and the manifest items it hashes (read once per session)."""
    if _MACHINE_KEY not in config.stash:
        from streambench.harness.instruments.manifest import FINGERPRINT_FIELDS, collect_manifest, fingerprint
        from streambench.harness.instruments.threads import ThreadConfig

        # the fixtures' thread setting (the default, one intra-op thread), not this process's pool at the
        # moment of reading: a session that ran a model and one that has not must agree
        manifest = collect_manifest({}, requested_threads=ThreadConfig())
        config.stash[_MACHINE_KEY] = {
            "fingerprint": fingerprint(manifest),
            "environment": json.loads(
                json.dumps({name: getattr(manifest, name).value for name in FINGERPRINT_FIELDS}, default=str)
            ),
        }
    return config.stash[_MACHINE_KEY]


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict[str, Any]) -> None:
    machine_info[EXTRA_KEY] = machine_entry(config)


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_compare_machine_info(
    config: pytest.Config, benchmarksession: Any, machine_info: dict[str, Any], compared_benchmark: Any
) -> None:
    saved = list(_saved_streambench(compared_benchmark))
    if not saved:
        return
    ours = machine_info.get(EXTRA_KEY, {}).get("fingerprint")
    theirs = (compared_benchmark.get("machine_info") or {}).get(EXTRA_KEY, {}).get("fingerprint")
    if ours == theirs:
        return
    message = (
        f"streambench: the saved benchmarks ({', '.join(saved[:3])}{', ...' if len(saved) > 3 else ''}) were "
        f"measured in environment fingerprint {theirs}, this machine is {ours}: latencies from different "
        "environments are not compared (DESIGN.md 'Results'). Re-record the baseline here, or pass "
        "--streambench-fingerprint=warn."
    )
    if config.getoption("streambench_fingerprint") == "warn":
        benchmarksession.logger.warning(message)
        return
    raise pytest.UsageError(message)


def _saved_streambench(compared_benchmark: Any) -> Iterator[str]:
    for bench in compared_benchmark.get("benchmarks", []):
        if EXTRA_KEY in (bench.get("extra_info") or {}):
            yield str(bench.get("name"))
