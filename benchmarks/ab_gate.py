"""What the A/B-gate benchmark uses (benchmarks/test_ab_gate_under_hogs.py): two CPU hogs, a user's project
in two checkouts with a torch model at their root, the model's cost calibrated, and the table.

Not a test module (no ``test_`` prefix): pytest does not collect it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

MODEL = '''"""A keyword-spotting-sized torch model: an input layer, {reps} hidden layers, {fine} cheap
element-wise steps (the fine knob of its cost), an output layer."""

import torch
from torch import nn

REPS, FINE = {reps}, {fine}


class Model(nn.Module):
    def __init__(self, input_dim: int, classes: int, width: int = 64) -> None:
        super().__init__()
        self.inp = nn.Linear(input_dim, width)
        self.hidden = nn.Linear(width, width)
        self.out = nn.Linear(width, classes)

    def reset(self) -> None:
        pass

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.inp(x))
        for _ in range(REPS):
            h = torch.tanh(self.hidden(h))
        for _ in range(FINE):
            h = h * 1.0
        return self.out(h)


def build(input_dim: int = 64, n_classes: int = 29) -> nn.Module:
    torch.manual_seed(0)
    return Model(input_dim, n_classes)
'''

OPTIONS = {"factory": "kws.models:build", "mode": "stateful", "modalities": ["audio"]}
"""The head's torch-module options in every job (the synthetic data's audio: 64 values, 29 classes)."""

GATE_TEST = """
def test_latency_gate(streambench_ab):
    streambench_ab(adapter="torch-module", options={options!r}, fail_on={gate!r}, seed={seed})
"""


def write_checkout(root: Path, reps: int, fine: int) -> Path:
    """A user's project: the model package ``kws`` at its root."""
    (root / "kws").mkdir(parents=True, exist_ok=True)
    (root / "kws" / "__init__.py").write_text("")
    (root / "kws" / "models.py").write_text(MODEL.format(reps=reps, fine=fine))
    (root / "tests").mkdir(exist_ok=True)
    return root


def predict_ns(reps: int, fine: int, calls: int) -> list[int]:
    """Per-call time of the model's ``predict()`` through the torch-module adapter, in this process (one
    intra-op thread, as the harness runs it)."""
    import numpy as np
    import torch

    from streambench.adapters.contract import Frame
    from streambench.adapters.torch_module import TorchModuleAdapter, TorchModuleOptions

    namespace: dict[str, Any] = {}
    exec(compile(MODEL.format(reps=reps, fine=fine), "<model>", "exec"), namespace)
    torch.set_num_threads(1)
    options = {**OPTIONS, "classes": tuple(f"c{k}" for k in range(29)), "input_dims": {"audio": 64}}
    adapter = TorchModuleAdapter(TorchModuleOptions.model_validate(options), module=namespace["build"]())
    frame = Frame(index=0, t=0.0, inputs={"audio": np.zeros(64, dtype=np.float32)})
    for _ in range(200):
        adapter.predict(frame)
    out = []
    for _ in range(calls):
        started = time.perf_counter_ns()
        adapter.predict(frame)
        out.append(time.perf_counter_ns() - started)
    return out


def cost_ratio(base: tuple[int, int], head: tuple[int, int], rounds: int = 15, calls: int = 400) -> float:
    """Median over alternating rounds of head / base median per-call time, in this process."""
    ratios = []
    for _ in range(rounds):
        b = statistics.median(predict_ns(*base, calls))
        h = statistics.median(predict_ns(*head, calls))
        ratios.append(h / b)
    return statistics.median(ratios)


def calibrate(target_ns: float, slowdown: float) -> tuple[int, int, float, float]:
    """``reps`` for a model of about ``target_ns`` a frame, and the ``fine`` steps that make it ``slowdown``
    times as slow: (reps, fine, its cost in ns, the ratio measured)."""
    reps = 0
    cost = statistics.median(predict_ns(reps, 0, 500))
    while cost < target_ns and reps < 200:
        reps += 1
        cost = statistics.median(predict_ns(reps, 0, 500))
    fine, ratio = 0, 1.0
    step = max(1, round(cost * (slowdown - 1) / 2000))  # about 2 µs a step: start near the answer
    fine = step
    ratio = cost_ratio((reps, 0), (reps, fine))
    for _ in range(12):
        if abs(ratio - slowdown) < 0.01:
            break
        per_step = (ratio - 1) / fine
        fine = max(1, round((slowdown - 1) / per_step)) if per_step > 0 else fine + 1
        ratio = cost_ratio((reps, 0), (reps, fine))
    return reps, fine, cost, ratio


@pytest.fixture(scope="module")
def two_hogs() -> Iterator[None]:
    """A busy loop pinned to each core for the whole module (the issue's two CPU hogs)."""
    cores = sorted(os.sched_getaffinity(0))[:2]
    hogs = [
        subprocess.Popen(["taskset", "-c", str(core), "sh", "-c", "while :; do :; done"]) for core in cores
    ]
    time.sleep(0.5)
    yield
    for hog in hogs:
        hog.kill()
        hog.wait()


def run_job(
    base: Path, head: Path, seed: int, gate: str, timeout_s: float = 1800.0
) -> tuple[dict[str, Any], int]:
    """One CI job as a user runs it: pytest in the head checkout, the base checkout named; the report the
    fixture recorded and pytest's exit code."""
    test = head / "tests" / "test_gate.py"
    test.write_text(GATE_TEST.format(options=OPTIONS, gate=gate, seed=seed))
    xml = head / "report.xml"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test),
            "--streambench-base-path", str(base), f"--junitxml={xml}"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        argv, cwd=head, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    tree = ElementTree.parse(xml)
    reports = [p.get("value") for p in tree.iter("property") if p.get("name") == "streambench_ab"]
    if not reports:
        raise AssertionError(
            f"no report (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    return json.loads(reports[0] or "{}"), done.returncode


def p50(report: Mapping[str, Any]) -> Mapping[str, Any]:
    effect: Mapping[str, Any] = next(e for e in report["gate"]["effects"] if e["key"] == "p50")
    return effect


def line(case: str, seed: int, report: Mapping[str, Any], code: int) -> str:
    e = p50(report)
    shown = ", ".join("none" if e[k] is None else f"{e[k]:.3f}" for k in ("ratio", "low", "high"))
    deciding = [r.get("clock", "wall") for r in report["gate"]["rules"]]
    return (
        f"{case} seed {seed:2d}: {report['verdict']} (exit {code}; on {'/'.join(deciding)}), p50 {shown}, "
        f"{report['pairs']} pairs, {report['seconds']:.0f} s, stop {report['stop']}"
    )


HEADER = (
    "| case | model cost | jobs | regression | no regression | inconclusive | called on CPU time | pairs | "
    "seconds per job |\n|---|---:|---:|---:|---:|---:|---:|---|---|"
)


def row(case: str, cost_us: float, reports: Sequence[Mapping[str, Any]]) -> str:
    verdicts = [str(r["verdict"]) for r in reports]
    cpu = sum(
        1 for r in reports if r["verdict"] == "regression" and r["gate"]["rules"][0].get("clock") == "cpu"
    )
    pairs = sorted(int(r["pairs"]) for r in reports)
    seconds = sorted(float(r["seconds"]) for r in reports)
    return (
        f"| {case} | {cost_us:.0f} µs | {len(reports)} | {verdicts.count('regression')} | "
        f"{verdicts.count('no regression')} | {verdicts.count('inconclusive')} | {cpu} | "
        f"{pairs[0]}–{pairs[-1]} (median {pairs[len(pairs) // 2]}) | "
        f"{seconds[0]:.0f}–{seconds[-1]:.0f} (median {seconds[len(seconds) // 2]:.0f}) |"
    )
