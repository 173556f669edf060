"""Sequence checks that cannot be fooled or skipped silently (issue 15 item 4;
harness/runs/causality/sequence.py). Each cheat is planted
(tests/harness/runs/causality/sequence_offenders.py) and each test fails without the protection it
names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streambench.harness.runs.causality.protocol import CausalityResult, execute_causality
from streambench.protocols.causality import CausalityConfig
from tests.harness.runs.causality.test_protocol import small

pytestmark = pytest.mark.slow  # end to end through subprocesses: its own CI step (pytest -m slow)


OFFENDERS = "tests.harness.runs.causality.sequence_offenders"


def causality(tmp_path: Path, adapter: str, sealed: bool = False, **options: Any) -> CausalityResult:
    config = small(tmp_path, adapter, **options)
    return execute_causality(config, CausalityConfig(sealed=sealed, cut_seed=3))[0]


def check(result: CausalityResult, name: str) -> Any:
    return next(c for c in result.report.checks if c.name == name)


def test_symmetric_padding_is_caught_by_gradients_and_perturbation(tmp_path: Path) -> None:
    result = causality(tmp_path, f"{OFFENDERS}:SymmetricPadding")
    assert set(result.report.failed) == {"gradient_flow", "stream_sequence", "sequence_perturbation"}
    assert (check(result, "gradient_flow").first_frame, check(result, "gradient_flow").first_source) == (0, 1)


def test_a_detached_future_tap_hides_from_gradients_but_not_from_the_perturbation_probe(
    tmp_path: Path,
) -> None:
    result = causality(tmp_path, f"{OFFENDERS}:DetachedTap")
    assert check(result, "gradient_flow").passed  # .detach() blinds the gradient check: the reason for
    assert not check(result, "sequence_perturbation").passed  # the probe, which sees the future tap
    assert "sequence_perturbation" in result.report.failed


def test_a_declared_sequence_mode_that_cannot_be_checked_fails(tmp_path: Path) -> None:
    result = causality(tmp_path, f"{OFFENDERS}:DeclaredOnly")
    assert result.report.failed == ("sequence_mode",)
    assert "cannot be checked is a failure" in check(result, "sequence_mode").detail


def test_a_sequence_mode_without_gradients_is_still_probed(tmp_path: Path) -> None:
    result = causality(tmp_path, f"{OFFENDERS}:NoDifferentiable")
    assert result.report.passed, result.report.failed
    assert {"stream_sequence", "sequence_perturbation"} <= {c.name for c in result.report.checks}
    assert "gradient_flow" in result.skipped and "perturbation" in result.skipped["gradient_flow"]
