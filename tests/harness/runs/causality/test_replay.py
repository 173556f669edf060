"""The scored run's own outputs as evidence (issue 15 item 3: ``scored_replay``;
harness/runs/causality/replay.py). Each cheat is planted (adapters/sneaky.py) and each test fails
without the protection it names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streambench.harness.execution.config import IsolationConfig
from streambench.harness.runs.causality.protocol import CausalityResult, execute_causality
from streambench.harness.runs.session import execute_run
from streambench.protocols.causality import CausalityConfig
from tests.harness.runs.causality.test_protocol import small
from tests.harness.runs.causality.test_sequence import check

pytestmark = pytest.mark.slow  # end to end through subprocesses: its own CI step (pytest -m slow)


def online_then_causality(
    tmp_path: Path, adapter: str, scored_in_process: bool = True, **options: Any
) -> CausalityResult:
    config = small(tmp_path, adapter, **options)
    # the scored run in process (--in-process), where these cheats can reach the engine's frame list;
    # the default scored run is sealed, where they cannot (test_a_cheat_gains_nothing_in_the_default_run)
    execute_run(config.model_copy(update={"isolate": not scored_in_process}))
    return execute_causality(config, CausalityConfig(cut_seed=5))[0]  # sealed, in its run directory


def test_the_scored_runs_own_outputs_are_replayed_and_an_honest_model_reproduces_them(tmp_path: Path) -> None:
    result = online_then_causality(tmp_path, "reference")
    assert result.report.passed, result.report.failed
    assert "scored_replay" in {c.name for c in result.report.checks}


def test_a_model_that_cheats_only_after_n_resets_is_caught_by_its_scored_outputs(tmp_path: Path) -> None:
    """Honest for its first 3 resets (what a fresh audit instance sees), then it reads the engine's
    frame list: the audits on fresh instances see an honest model; its own scored outputs do not
    replay."""
    result = online_then_causality(tmp_path, "offender-stack-peeking", honest_resets=3)
    assert "scored_replay" in result.report.failed
    assert check(result, "occlusion").passed  # sealed: the audits cannot see the cheat itself


def test_a_cheat_gains_nothing_in_the_default_sealed_scored_run(tmp_path: Path) -> None:
    """The same cheat scored the default way (sealed): the engine's frame list is not in its process, so
    its scored outputs are honest and replay (issue 24: the default flow is sealed)."""
    result = online_then_causality(
        tmp_path, "offender-stack-peeking", scored_in_process=False, honest_resets=3
    )
    assert result.report.passed, result.report.failed
    assert check(result, "scored_replay").passed


def test_a_model_that_behaves_when_it_sees_an_audit_on_its_call_stack_is_caught(tmp_path: Path) -> None:
    """Honest whenever a module named like streambench.harness.runs.causality is on its call stack (it tells
    the audit from the scored run), cheating otherwise: its scored outputs are the evidence against it."""
    result = online_then_causality(
        tmp_path, "offender-stack-peeking", avoid="streambench.harness.runs.causality"
    )
    assert "scored_replay" in result.report.failed


def test_a_run_directory_of_another_adapter_is_not_replayed(tmp_path: Path) -> None:
    execute_run(small(tmp_path, "reference"))
    result = execute_causality(small(tmp_path, "null"), CausalityConfig(sealed=False, cut_seed=1))[0]
    assert "another adapter" in result.skipped["scored_replay"]


def test_scored_and_audited_runs_reach_the_model_through_the_same_entry_points(tmp_path: Path) -> None:
    """A model whose answers depend on its call stack, thread and argument types: scored sealed, then
    audited sealed, it answers identically in every run (timed or untimed, clean, occluded, replayed),
    so nothing it can see tells an audit from the scored run. Scored in process, its saved outputs do
    not replay: the scored run was observably different, and the replay says so."""
    config = small(tmp_path, "offender-call-stack").model_copy(
        update={"isolate": True, "isolation": IsolationConfig(sealed=True)}
    )
    execute_run(config)
    sealed = execute_causality(config, CausalityConfig(cut_seed=2))[0]
    assert sealed.report.passed, sealed.report.failed
    assert "scored_replay" in {c.name for c in sealed.report.checks}
    in_process = online_then_causality(tmp_path / "in-process", "offender-call-stack")
    assert in_process.report.failed == ("scored_replay",)
