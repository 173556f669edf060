"""The hardware-normalised page (``streambench hardware``, harness/report/hardware_html.py) holds a hostile
value only as text: the baseline's and the methods' names, run ids, machines, manifest items, the reasons
of nulls, refusals and notes, as the run directories of several machines can hold them
(:mod:`tests.harness.report.hostile`)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from streambench.harness.report.hardware_html import write_hardware_html
from streambench.harness.results.hardware import Estimate, HardwareView, Machine, NormalisedRow, RawRun
from tests.harness.report.hostile import Planter, assert_only_escaped


def test_the_hardware_page_shows_every_planted_value_as_text(tmp_path: Path) -> None:
    plant = Planter()

    def measured(value: float) -> Estimate:
        return Estimate(value=value, low=0.9 * value, high=1.1 * value)

    def null(field: str) -> Estimate:
        return Estimate(value=None, reason=plant(field))

    run = RawRun(
        run_id=plant("run_id"),
        path="not-shown",
        method=plant("method"),
        adapter_options={"not": "shown"},
        created_at=datetime(2026, 1, 2, tzinfo=timezone.utc),
        streams=2,
        frames=100,
        mean_latency_ms=measured(1.0),
        p50_ms=1.0,
        p95_ms=2.0,
        fps=1000.0,
        f1=measured(0.8),
        gpu_energy_per_frame_j=null("gpu_energy.reason"),
        cpu_energy_per_frame_j=null("cpu_energy.reason"),
        flops_per_frame=None,
        flops_reason=plant("flops.reason"),
        quality=plant("quality"),
        stream_ms=[50.0, 50.0],
        stream_frames=[50, 50],
    )
    row = NormalisedRow(
        method=plant("row.method"),
        machine=plant("row.machine"),
        fingerprint="0123456789abcdef",
        run_id=run.run_id,
        baseline_run_id=run.run_id,
        speedup=measured(2.0),
        relative_latency=measured(0.5),
        flops_normalised_latency_ms=null("flops_normalised.reason"),
        relative_flops_normalised_latency=null("relative_flops.reason"),
        relative_gpu_energy=null("relative_gpu.reason"),
        relative_cpu_energy=null("relative_cpu.reason"),
        f1=measured(0.8),
        notes=[plant("row.note")],
    )
    machine = Machine(
        name=plant("machine.name"),
        fingerprint=plant("machine.fingerprint"),
        hardware={plant("hardware.key"): plant("hardware.value")},
        baseline_run_id=run.run_id,
        refused=None,
        runs=[run],
        unused={plant("unused.run"): plant("unused.why")},
        rows=[row],
        notes=[plant("machine.note")],
    )
    other = machine.model_copy(
        update={"name": plant("refused.name"), "refused": plant("refused.why"), "rows": [], "unused": {}}
    )
    view = HardwareView(
        baseline=plant("baseline"),
        delta_ms=100.0,
        confidence=0.95,
        n_resamples=100,
        interval_method=plant("interval_method"),
        machines=[machine, other],
        skipped={plant("skipped.path"): plant("skipped.why")},
        notes=[plant("view.note")],
    )
    page = write_hardware_html(view, tmp_path / "hardware.html").read_text(encoding="utf-8")
    assert page.count("<svg") == 1  # the Pareto plot, its labels hostile too
    assert_only_escaped(page, plant.planted)
