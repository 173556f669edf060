"""What of the sealed, sandboxed worker a run did without (harness/results/trust.py), and where it shows:
the run's warnings, its execution label (which compare refuses to mix), ab's sides."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.harness.execution.sandbox import SandboxRecord
from streambench.harness.results.quality import judge_quality
from streambench.harness.results.trust import execution_label, trust_gaps

SANDBOXED = SandboxRecord(
    status="sandboxed", mechanism="landlock ABI 7", processes="new processes refused (seccomp)"
)


@pytest.mark.parametrize(
    ("mode", "sandbox", "label", "said"),
    [
        ("sealed", SANDBOXED, "sealed", None),
        ("sealed", SandboxRecord(status="unsandboxed", reason="sandbox off (--sandbox off)",
                                 processes=None), "sealed, unsandboxed", "unsandboxed (sandbox off"),
        ("sealed", SandboxRecord(status="unsandboxed", reason="the kernel has no Landlock",
                                 processes="new processes refused (seccomp)"), "sealed, unsandboxed",
         "the kernel has no Landlock"),
        ("sealed", SandboxRecord(status="sandboxed", mechanism="landlock ABI 7",
                                 processes="new processes allowed: seccomp is unavailable"),
         "sealed, processes allowed", "CPU the model spent in them was not counted"),
        ("isolated", None, "isolated", "not sealed (--no-sealed)"),
        ("in-process", None, "in-process", "in-process run (--in-process)"),
    ],
)  # fmt: skip
def test_each_missing_safeguard_is_named(
    mode: str, sandbox: SandboxRecord | None, label: str, said: str | None
) -> None:
    gaps = trust_gaps(mode, sandbox)
    assert execution_label(mode, sandbox) == label
    if said is None:
        assert gaps == []
    else:
        assert any(said in gap for gap in gaps), gaps


def test_a_sealed_run_recorded_before_the_sandbox_is_not_accused() -> None:
    assert trust_gaps("sealed", None) == [] and execution_label("sealed", None) == "sealed"


def test_the_models_own_threads_are_not_another_process() -> None:
    latency = np.full(100, 1_000_000)
    foreign = judge_quality(latency, 2, involuntary_switches=80, clock_resolution_ns=1.0)
    assert foreign.verdict == "INVALID" and "another process's time" in foreign.reasons[0]
    own = judge_quality(latency, 2, involuntary_switches=80, clock_resolution_ns=1.0, own_threads_share=0.6)
    assert own.verdict == "VALID" and any("its own threads'" in note for note in own.notes)
