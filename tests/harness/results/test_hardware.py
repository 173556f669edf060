"""The hardware-normalised view across machines (issue 27 item 7; harness/results/hardware.py,
protocols/metrics/speedup_interval.py, ``streambench hardware``).

How a second machine is made without one: a machine is its environment fingerprint, the hash of the timing
items of the run's environment manifest (harness/instruments/manifest.py). A copy of a run directory whose
manifest names another CPU (``environment.cpu_model``), with the fingerprint recomputed from that manifest
by the harness's own :func:`fingerprint`, is a run of another machine to every reader. A machine twice as
slow is simulated either by scaling the copy's recorded latencies by 2 (fast tier: exact, so the speed-ups
must agree to the last digit) or, in the slow tier, by real runs whose busy-waits last twice as long.
"""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.instruments.manifest import EnvironmentManifest, fingerprint
from streambench.harness.results.files import load_result
from streambench.harness.results.hardware import HardwareInputError, HardwareView, build_view
from streambench.harness.runs.session import execute_run

METHOD = "streambench.adapters.null:BusyWaitAdapter"
"""The method: the busy-wait adapter under its module:Class name, so that it is another method than the
baseline ``busywait`` (a method is what a run names as its adapter)."""


# --- runs, and a second machine made of them -------------------------------------------------------------


def _run(store: Path, run_id: str, adapter: str, duration_us: float, sealed: bool = False) -> Path:
    config = RunConfig.model_validate(
        {
            "adapter": adapter,
            "adapter_options": {"duration_us": duration_us},
            "data": {"num_streams": 4 if not sealed else 2, "duration_s": 1.0 if not sealed else 2.0},
            "engine": {"warmup_frames": 10},
            "output_dir": store,
            "run_id": run_id,
            "isolate": sealed,
        }
    )
    return execute_run(config)[2]


def _edit(run_dir: Path, change: Any) -> None:
    path = run_dir / "result.json"
    raw = json.loads(path.read_text())
    change(raw)
    path.write_text(json.dumps(raw))


def _move_to_machine(raw: dict[str, Any], cpu: str) -> None:
    """The run's manifest names another CPU, and its fingerprint is recomputed from the manifest."""
    raw["environment"]["cpu_model"] = {"value": cpu, "reason": None}
    raw["fingerprint"] = fingerprint(EnvironmentManifest.model_validate(raw["environment"]))


def _scale_latencies(raw: dict[str, Any], factor: float) -> None:
    """Every recorded latency figure the view reads, times ``factor`` (a machine that slow)."""
    speeds = [s["speed"] for s in raw["metrics"]["streams"]] + [raw["metrics"]["overall"]["speed"]]
    for speed in speeds:
        latency = speed["latency"]
        for key in ("mean_ms", "std_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms", "min_ms"):
            latency[key] *= factor
        latency["fps"] = latency["fps"] / factor if latency["fps"] else latency["fps"]
    mean = raw["metrics"]["headline"]["mean_latency_ms"]
    for key in ("estimate", "low", "high"):
        mean[key] *= factor


def copy_to_machine(run_dir: Path, store: Path, cpu: str, slower: float = 1.0) -> Path:
    """A copy of ``run_dir`` in ``store`` as if measured on a machine with CPU ``cpu``, ``slower`` times
    slower."""
    copy = store / run_dir.name
    shutil.copytree(run_dir, copy)
    _edit(copy, lambda raw: (_move_to_machine(raw, cpu), _scale_latencies(raw, slower)))
    return copy


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Machine A's store: the baseline busy-waits 500 µs a frame, the method 250 µs (real runs)."""
    store = tmp_path_factory.mktemp("hardware") / "machine-a"
    _run(store, "base", "busywait", 500.0)
    _run(store, "method", METHOD, 250.0)
    return store


@pytest.fixture
def two_machines(measured: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Machine A's store as measured, and machine B's: copies of its runs on a CPU twice as slow."""
    store_b = tmp_path / "machine-b"
    for name in ("base", "method"):
        copy_to_machine(measured / name, store_b, "simulated CPU twice as slow", slower=2.0)
    return measured, store_b


def _row(view: HardwareView, machine: str, method: str) -> Any:
    return next(r for r in view.rows() if r.machine == machine and r.method == method)


@pytest.mark.processes
def test_two_machines_2x_apart_in_raw_latency_agree_in_speedup(two_machines: tuple[Path, Path]) -> None:
    view = build_view(list(two_machines), "busywait")
    a, b = view.machines
    assert a.fingerprint != b.fingerprint and not a.refused and not b.refused
    assert b.hardware["cpu_model"] == "simulated CPU twice as slow" and not a.notes and not b.notes
    raw_a = {r.method: r.mean_latency_ms.value for r in a.runs}
    raw_b = {r.method: r.mean_latency_ms.value for r in b.runs}
    assert raw_b["busywait"] == pytest.approx(2 * raw_a["busywait"], rel=1e-9)  # raw: 2x apart
    assert raw_a["busywait"] > 0.5 and raw_a[METHOD] > 0.25  # the busy-waits were measured, at least
    speed_a, speed_b = _row(view, "machine 1", METHOD).speedup, _row(view, "machine 2", METHOD).speedup
    for key in ("value", "low", "high"):  # the same streams, 2x slower: the same quotients
        assert getattr(speed_b, key) == pytest.approx(getattr(speed_a, key), rel=1e-9)
    assert speed_a.value == pytest.approx(raw_a["busywait"] / raw_a[METHOD], rel=1e-12)
    assert speed_a.low < speed_a.value < speed_a.high
    relative = _row(view, "machine 2", METHOD).relative_latency
    assert (relative.value, relative.low, relative.high) == pytest.approx(
        (1 / speed_b.value, 1 / speed_b.high, 1 / speed_b.low)
    )
    base_row = _row(view, "machine 1", "busywait")
    assert (base_row.speedup.value, base_row.speedup.low) == (1.0, None)


@pytest.mark.processes
def test_a_machine_without_a_baseline_run_is_refused_with_the_reason(
    two_machines: tuple[Path, Path], tmp_path: Path
) -> None:
    store_c = tmp_path / "machine-c"
    copy_to_machine(two_machines[0] / "method", store_c, "a third CPU")
    view = build_view([*two_machines, store_c], "busywait")
    c = view.machines[2]
    assert c.refused is not None and "no run of the baseline busywait on this machine" in c.refused
    assert c.fingerprint in c.refused and c.rows == [] and [r.run_id for r in c.runs] == ["method"]
    assert len(view.rows()) == 4  # machines A and B still normalised


def test_flops_and_energy_quotients_where_both_runs_measured_them(measured: Path, tmp_path: Path) -> None:
    store = tmp_path / "counted"
    for name, flops, energy in (("base", 2_000_000, 0.5), ("method", 500_000, 0.2)):
        copy = copy_to_machine(measured / name, store, "AMD EPYC with counters")

        def count(raw: dict[str, Any], flops: int = flops, energy: float = energy) -> None:
            raw["resources"].update(flops_per_frame=flops, flops_reason=None, energy_per_frame_j=energy)

        _edit(copy, count)
    row = _row(build_view([store], "busywait"), "machine 1", METHOD)
    latency = load_result(store / "method").metrics.headline.mean_latency_ms.estimate
    base_latency = load_result(store / "base").metrics.headline.mean_latency_ms.estimate
    # seed 004 §6.3.1: Latency_measured x FLOPs_baseline / FLOPs_measured
    assert row.flops_normalised_latency_ms.value == pytest.approx(latency * 4.0, rel=1e-9)
    assert row.relative_flops_normalised_latency.value == pytest.approx(
        latency * 4.0 / base_latency, rel=1e-9
    )
    assert row.relative_gpu_energy.value == pytest.approx(0.4)
    assert "one energy reading per run" in (row.relative_gpu_energy.reason or "")
    null = _row(build_view([measured], "busywait"), "machine 1", METHOD)
    assert null.flops_normalised_latency_ms.value is None
    assert null.flops_normalised_latency_ms.reason == (
        "FLOPs per frame unknown (both runs: torch's flop counter saw no matrix product or convolution in "
        "predict())"
    )


def test_the_newest_run_of_a_method_is_used_and_an_edited_fingerprint_is_noted(
    measured: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    for name in ("base", "method"):
        shutil.copytree(measured / name, store / name)
    shutil.copytree(measured / "method", store / "method-old")

    def older(raw: dict[str, Any]) -> None:
        raw["run_id"] = "method-old"
        raw["created_at"] = (load_result(measured / "method").created_at - timedelta(days=1)).isoformat()

    _edit(store / "method-old", older)
    _edit(store / "base", lambda raw: raw["environment"]["cpu_model"].update(value="edited by hand"))
    (machine,) = build_view([store], "busywait").machines
    assert [r.run_id for r in machine.runs] == ["base", "method"]
    assert list(machine.unused) == ["method-old"]
    assert "does not match the environment its runs record" in machine.notes[0]


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["hardware", *args], env={"COLUMNS": "250"})
    return result.exit_code, result.output


def test_the_command_prints_the_tables_and_writes_the_page(
    two_machines: tuple[Path, Path], tmp_path: Path
) -> None:
    store_c = tmp_path / "machine-c"
    copy_to_machine(two_machines[0] / "method", store_c, "a <b>third</b> CPU")
    page = tmp_path / "hw.html"
    code, output = invoke(*map(str, two_machines), str(store_c), "--baseline", "busywait", "-o", str(page))
    assert code == 0, output
    assert "Against busywait measured on the same machine" in output
    assert "machine 2 (fingerprint" in output and "refused: machine 3" in output
    assert "FLOPs per frame unknown (both runs" in output  # a null's reason, under its table
    html = page.read_text()
    assert html.count("<svg") == 1 and "Pareto: F1 against relative latency" in html
    assert "machine 3 refused" in html and "a &lt;b&gt;third&lt;/b&gt; CPU" in html and "<b>third" not in html
    code, output = invoke(*map(str, two_machines), "--baseline", "busywait", "-o", str(page), "--json")
    data = json.loads(output)
    assert (
        code == 0 and data["report"] == str(page) and [m["refused"] for m in data["machines"]] == [None] * 2
    )
    assert data["machines"][1]["rows"][1]["speedup"]["value"] > 1.2  # the method busy-waits half as long
    assert "stream_ms" not in data["machines"][0]["runs"][0]


def test_bad_input_is_one_line_naming_the_path_or_option(measured: Path, tmp_path: Path) -> None:
    code, output = invoke(str(tmp_path / "nowhere"), "--baseline", "busywait")
    assert (code, output.strip()) == (2, f"error: {tmp_path / 'nowhere'}: no such run directory or store")
    code, output = invoke(str(measured), "--baseline", "nope", "-o", str(tmp_path / "x.html"))
    assert (
        code == 2
        and f"--baseline nope: no run of it among the 2 runs given (their adapters: busywait, {METHOD})"
        in output.replace("\n", "")
    )
    broken = tmp_path / "broken"
    shutil.copytree(measured / "base", broken)
    (broken / "result.json").write_text("{")
    code, output = invoke(str(broken), "--baseline", "busywait")
    assert (
        code == 2
        and str(broken / "result.json") in output.replace("\n", "")
        and len(output.splitlines()) <= 2
    )
    store = tmp_path / "store"
    shutil.copytree(broken, store / "broken")
    shutil.copytree(measured / "base", store / "base")
    view = build_view([store], "busywait")
    assert list(view.skipped) == [str(store / "broken")] and len(view.machines[0].runs) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(HardwareInputError, match="neither a run directory"):
        build_view([empty], "busywait")
    with pytest.raises(HardwareInputError, match="--delta-ms 7: run"):
        build_view([measured], "busywait", delta_ms=7.0)


# --- slow: real runs, two busy durations -----------------------------------------------------------------


@pytest.mark.slow
def test_real_runs_on_a_machine_twice_as_slow_agree_in_speedup(tmp_path: Path) -> None:
    """Sealed runs: machine A's baseline busy-waits 2 ms a frame and the method 1 ms; machine B's (moved to
    another fingerprint after the runs, latencies as measured) 4 ms and 2 ms. Raw latencies differ 2x;
    the speed-ups agree within 15 %. On a machine too busy to measure (other processes preempt the
    busy-waits: each preemption across a deadline adds milliseconds to a frame) the harness calls the
    measurement INVALID, and agreement is then not to be expected: the test says so and is skipped; so it is
    where the load stretched one store's busy-waits more than the other's (the two baselines not 2x apart,
    which no harness can undo: the busy-wait's own wall time grew)."""
    store_a, store_b = tmp_path / "a", tmp_path / "b"
    for store, scale in ((store_a, 1.0), (store_b, 2.0)):
        _run(store, "base", "busywait", 2000.0 * scale, sealed=True)
        _run(store, "method", METHOD, 1000.0 * scale, sealed=True)
    for name in ("base", "method"):
        _edit(store_b / name, lambda raw: _move_to_machine(raw, "simulated CPU twice as slow"))
    view = build_view([store_a, store_b], "busywait")
    a, b = view.machines
    assert a.fingerprint != b.fingerprint and a.hardware["cpu_model"] != b.hardware["cpu_model"]
    base_a = next(r for r in a.runs if r.method == "busywait").mean_latency_ms.value
    base_b = next(r for r in b.runs if r.method == "busywait").mean_latency_ms.value
    speed_a, speed_b = _row(view, "machine 1", METHOD).speedup, _row(view, "machine 2", METHOD).speedup
    assert (
        base_a is not None and base_b is not None and speed_a.value is not None and speed_b.value is not None
    )
    assert base_a >= 2.0 and base_b >= 4.0 and speed_a.low is not None and speed_b.high is not None
    invalid = [f"{m.name} {r.run_id}" for m in (a, b) for r in m.runs if r.quality == "INVALID"]
    if invalid:
        pytest.skip(f"the machine is too busy to measure: INVALID measurements ({', '.join(invalid)})")
    if not 1.7 < base_b / base_a < 2.3:  # seen at load 6: 5.20 / 2.18 ms, every run VALID
        pytest.skip(
            f"the machine stretched the busy-waits unevenly (baselines {base_a:.2f} and {base_b:.2f} ms, "
            "not 2x apart): the premise of a machine twice as slow does not hold, so neither does agreement"
        )
    # about 2 (2 ms against 1 ms, less the harness's own cost per frame, which a loaded machine stretches
    # on either side); the point is the agreement across the two machines
    assert 1.5 < speed_a.value < 2.5 and abs(speed_b.value / speed_a.value - 1) < 0.15
