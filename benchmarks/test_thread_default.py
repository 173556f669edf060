"""Issue 27, item 1: Silero VAD's latency with the harness's thread default before and after.

Before: torch's own pool in the adapter's process (``threads.intra_op`` left unset, i.e. ``"torch"``: one
thread per core); after: one intra-op thread, the default since issue 27. Everything else is
examples/vad.toml as the README runs it (the sealed worker, the generated speech-like recordings of
``python -m tests.data.speech_like``), through :func:`streambench.harness.runs.session.execute_run`.

Opt-in: ``python -m pytest benchmarks/test_thread_default.py -s``. The two settings alternate run by run
(before, after, before, after, ... ``ROUNDS`` times each) on the same files in one process, so a busy
machine slows both alike; printed per round: each run's p95 and RTF and the ratios before / after, then
their medians. The assertion is on the ratio only (no absolute time): one thread is not slower at p95.
"""

from __future__ import annotations

import datetime
import os
import statistics
from pathlib import Path
from typing import Any

import pytest

from streambench.harness.execution.config import RunConfig
from streambench.harness.instruments.host_items import read_cpu_model
from streambench.harness.io.config_file import load_config_file
from streambench.harness.runs.session import execute_run
from tests.data.speech_like import write_example

pytestmark = pytest.mark.benchmark
pytest.importorskip("silero_vad")

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 4
SETTINGS: dict[str, dict[str, Any]] = {
    "before (torch's pool)": {"intra_op": "torch"},
    "after (1 thread)": {},  # the default
}


def _run(tree: dict[str, Any], threads: dict[str, Any], where: Path, run_id: str) -> tuple[float, float, str]:
    config = RunConfig.model_validate({**tree, "threads": threads, "output_dir": where, "run_id": run_id})
    result, _, _ = execute_run(config)
    speed = result.metrics.overall.speed
    assert speed.rtf is not None
    return speed.latency.p95_ms, speed.rtf, result.threads.set_by or "?"


def test_one_thread_against_torchs_pool_interleaved(tmp_path: Path) -> None:
    speech = tmp_path / "speech"
    write_example(speech)
    tree = load_config_file(ROOT / "examples" / "vad.toml")
    tree["data"]["directory"] = str(speech)
    tree.pop("threads", None)
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in SETTINGS}
    print(
        f"\n{datetime.date.today()} · {read_cpu_model().value} · {len(os.sched_getaffinity(0))} usable cores "
        f"· load average {os.getloadavg()[0]:.1f} · silero-vad (TorchScript), sealed worker"
    )
    for k in range(ROUNDS):
        line = []
        for name, threads in SETTINGS.items():
            p95, rtf, set_by = _run(
                tree, threads, tmp_path / "results", f"r{k}-{len(figures[name])}-{name[:5]}"
            )
            figures[name].append((p95, rtf))
            line.append(f"{name} [{set_by}]: p95 {p95:.3f} ms, RTF {rtf:.4f}")
        before, after = (figures[name][-1] for name in SETTINGS)
        print(f"round {k + 1}: " + " | ".join(line) + f" | p95 ratio {before[0] / after[0]:.1f}x")
    p95_ratios = [b[0] / a[0] for b, a in zip(*figures.values(), strict=True)]
    rtf_ratios = [b[1] / a[1] for b, a in zip(*figures.values(), strict=True)]
    print(
        f"median over {ROUNDS} rounds: p95 before / after {statistics.median(p95_ratios):.1f}x "
        f"(rounds: {', '.join(f'{r:.1f}' for r in p95_ratios)}); RTF before / after "
        f"{statistics.median(rtf_ratios):.1f}x (rounds: {', '.join(f'{r:.1f}' for r in rtf_ratios)})"
    )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    assert statistics.median(p95_ratios) >= 1.0
