"""The pytest plugin (harness/integrations/pytest_plugin.py): engine-measured frames as pytest-benchmark
rounds, and a
latency regression planted in a slowed copy of an adapter caught by ``--benchmark-compare-fail``.

The plugin is driven the way a project's CI drives it: ``pytester.runpytest_subprocess`` on a fresh test
file, with the plugin loaded from its ``pytest11`` entry point.
"""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest

from streambench.harness.integrations.pytest_plugin import TIMER_NAME, ReplayTimer, run_config

pytest_plugins = ["pytester"]


EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "test_latency_example.py"


MODEL = """
from pydantic import Field

from streambench.adapters.null import BusyWaitAdapter, BusyWaitOptions


class MyModelOptions(BusyWaitOptions):
    duration_us: float = Field({duration_us}, gt=0)


class MyModel(BusyWaitAdapter):
    '''Stands for a project's model: this commit spins {duration_us} µs per frame.'''

    Options = MyModelOptions
"""


LATENCY_TEST = """
import json
from pathlib import Path


def test_my_model_latency(streambench_latency):
    run = streambench_latency(adapter="my_model:MyModel", streams=2, duration_s=1.0, warmup_frames=10)
    assert run.latency.n == 2 * 25
    Path("engine_latency.json").write_text(json.dumps({
        "latency_ns": run.latency_ns.tolist(),
        "fingerprint": run.fingerprint,
        "run_dir": str(run.run_dir),
    }))
"""


def _write_model(pytester: pytest.Pytester, duration_us: float) -> None:
    pytester.makepyfile(my_model=MODEL.format(duration_us=duration_us))


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A fresh pytest process, as in a project's CI (the plugin comes from its entry point). Not in
    process: pytester drops the modules a run imported, and torch cannot be imported twice. Hypothesis's
    plugin, slow to import and unused here, is left out."""
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


# --- in process -------------------------------------------------------------------------------------


def test_plugin_is_registered_through_the_pytest11_entry_point() -> None:
    plugins = {e.name: e.value for e in entry_points(group="pytest11")}
    assert plugins.get("streambench") == "streambench.harness.integrations.pytest_plugin"


def test_replay_timer_gives_each_round_its_latency_and_refuses_extra_reads() -> None:
    timer = ReplayTimer()
    timer.load(np.array([200_000, 1_500, 3_000_000], dtype=np.int64))
    durations = []
    for _ in range(3):
        start = timer()
        durations.append(timer() - start)
    assert durations == pytest.approx([200e-6, 1.5e-6, 3e-3], rel=1e-12)
    assert timer.reads == 6 and timer.__name__ == TIMER_NAME
    with pytest.raises(RuntimeError, match="read 7 times for 3 rounds"):
        timer()
    timer.load(np.array([7], dtype=np.int64))  # loading starts over
    assert timer() == 0.0 and timer() == pytest.approx(7e-9)


def test_run_config_fits_the_events_into_short_streams(tmp_path: Path) -> None:
    config = run_config("busywait", {"duration_us": 50}, 3, 1.0, 10, tmp_path)
    assert config.data.num_streams == 3 and config.data.num_frames == 25
    assert (config.data.min_event_segments, config.data.max_event_segments) == (1, 1)
    assert config.engine.warmup_frames == 10 and config.adapter_options == {"duration_us": 50}
    assert run_config("null", None, 2, 10.0, 100, tmp_path).data.max_event_segments == 5


# --- through pytest-benchmark, in a subprocess --------------------------------------------------------


@pytest.mark.processes
def test_rounds_are_the_engine_per_frame_latencies(pytester: pytest.Pytester) -> None:
    _write_model(pytester, 300)
    pytester.makepyfile(test_latency=LATENCY_TEST)
    pytester.makepyfile(
        test_twice="""
        import pytest

        def test_second_call_is_refused(streambench_latency):
            streambench_latency(adapter="null", streams=1, duration_s=1.0, warmup_frames=0)
            with pytest.raises(RuntimeError, match="once per test"):
                streambench_latency(adapter="null")
        """
    )
    result = _run(pytester, "--benchmark-json=bench.json")
    result.assert_outcomes(passed=2)
    engine = json.loads((pytester.path / "engine_latency.json").read_text())
    latency_ns = np.asarray(engine["latency_ns"], dtype=np.int64)
    assert latency_ns.size == 50 and latency_ns.min() >= 300_000  # the model spins 300 µs per frame
    saved = json.loads((pytester.path / "bench.json").read_text())
    bench = next(b for b in saved["benchmarks"] if b["name"] == "test_my_model_latency")
    # every round is one frame, its duration the engine's measurement of that frame
    assert bench["stats"]["rounds"] == 50 and bench["stats"]["iterations"] == 1
    assert bench["stats"]["data"] == pytest.approx((latency_ns / 1e9).tolist(), rel=1e-9)
    assert bench["stats"]["median"] == pytest.approx(np.median(latency_ns) / 1e9, rel=1e-9)
    assert bench["stats"]["max"] == pytest.approx(latency_ns.max() / 1e9, rel=1e-9)
    assert bench["options"]["timer"] == TIMER_NAME
    # the protocol's figures in extra_info, the environment fingerprint in the machine info
    extra = bench["extra_info"]["streambench"]
    assert extra["adapter"] == "my_model:MyModel" and extra["frames"] == 50 and extra["streams"] == 2
    assert extra["warmup_frames"] == 10 and extra["clock"] == "time.perf_counter_ns"
    assert extra["latency_ms"]["n"] == 50
    assert extra["latency_ms"]["p50"] == pytest.approx(np.percentile(latency_ns, 50) / 1e6)
    assert extra["latency_ms"]["p95"] == pytest.approx(np.percentile(latency_ns, 95) / 1e6)
    assert extra["latency_ms"]["p99"] == pytest.approx(np.percentile(latency_ns, 99) / 1e6)
    assert list(extra["f1_strict"]) == ["0", "50", "100", "200", "500", "1000"]
    assert extra["f1_strict"]["1000"] == 0.0  # uniform scores over 29 classes never reach 0.5
    result_json = json.loads((Path(engine["run_dir"]) / "result.json").read_text())
    assert extra["run_id"] == result_json["run_id"]
    assert extra["fingerprint"] == engine["fingerprint"] == result_json["fingerprint"]
    machine = saved["machine_info"]["streambench"]
    assert machine["fingerprint"] == engine["fingerprint"] and len(machine["fingerprint"]) == 16
    assert machine["environment"]["torch_version"] == result_json["environment"]["torch_version"]["value"]


def _record_baseline(pytester: pytest.Pytester, storage: Path) -> None:
    _write_model(pytester, 200)
    pytester.makepyfile(test_latency=LATENCY_TEST)
    baseline = _run(pytester, "--benchmark-autosave", f"--benchmark-storage={storage}")
    baseline.assert_outcomes(passed=1)
    assert len(list(storage.rglob("0001_*.json"))) == 1


@pytest.mark.slow
def test_planted_regression_is_caught_by_compare_fail(pytester: pytest.Pytester) -> None:
    storage = pytester.path / "benchmarks"
    _record_baseline(pytester, storage)
    gate = ("--benchmark-compare", "--benchmark-compare-fail=median:10%", f"--benchmark-storage={storage}")

    unchanged = _run(pytester, *gate)
    unchanged.assert_outcomes(passed=1)
    assert unchanged.ret == 0
    assert "Performance has regressed" not in unchanged.stdout.str() + unchanged.stderr.str()

    _write_model(pytester, 2000)  # the regression: the model now spins 2 ms per frame
    slowed = _run(pytester, *gate)
    output = slowed.stdout.str() + slowed.stderr.str()
    assert slowed.ret != 0
    assert "Performance has regressed" in output
    assert "Field 'median' has failed PercentageRegressionCheck" in output
    assert "test_my_model_latency" in output


@pytest.mark.slow
def test_compare_refuses_another_environment_fingerprint(pytester: pytest.Pytester) -> None:
    storage = pytester.path / "benchmarks"
    _record_baseline(pytester, storage)
    (saved_path,) = storage.rglob("0001_*.json")
    saved = json.loads(saved_path.read_text())
    saved["machine_info"]["streambench"]["fingerprint"] = "0123456789abcdef"  # measured elsewhere
    saved_path.write_text(json.dumps(saved))
    gate = ("--benchmark-compare", "--benchmark-compare-fail=median:10%", f"--benchmark-storage={storage}")

    refused = _run(pytester, *gate)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "environment fingerprint 0123456789abcdef" in refused.stderr.str()
    assert "are not compared" in refused.stderr.str()

    warned = _run(pytester, *gate, "--streambench-fingerprint=warn")
    warned.assert_outcomes(passed=1)
    assert "environment fingerprint 0123456789abcdef" in warned.stdout.str() + warned.stderr.str()


@pytest.mark.slow
def test_readme_example_file_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_latency_example=EXAMPLE.read_text())
    result = _run(pytester, "--benchmark-json=bench.json")
    result.assert_outcomes(passed=3)
    saved = json.loads((pytester.path / "bench.json").read_text())
    rounds = {b["name"]: b["stats"]["rounds"] for b in saved["benchmarks"]}
    assert rounds == {
        "test_reference_model_latency": 200,
        "test_busy_wait_latency[200]": 50,
        "test_busy_wait_latency[500]": 50,
    }
    assert all(b["extra_info"]["streambench"]["frames"] == b["stats"]["rounds"] for b in saved["benchmarks"])


def test_readme_shows_the_example_file() -> None:
    """The README's example is the example file the test above runs (its code after the docstring)."""
    root = Path(__file__).resolve().parents[3]
    code = (root / "examples" / "test_latency_example.py").read_text().split('"""', 2)[2].strip()
    assert f"```python\n{code}\n```" in (root / "README.md").read_text()
