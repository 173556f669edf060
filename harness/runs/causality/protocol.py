"""The causality protocol (protocols/causality.py; seed 004 §6.2.3) as the harness runs it: the checks
(:mod:`streambench.harness.runs.causality.checks`) on the run's adapter and data, written to
``causality.json``; exit code 1 when a check fails."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.console import Console

from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.report.bundle import RunBundle, SectionSpec
from streambench.harness.report.html import Markup, absent, concat, markup, missing, table
from streambench.harness.results.headline import Figure
from streambench.harness.results.summary import print_causality
from streambench.harness.runs.causality.checks import (
    RESULT_FILE,
    SEQUENCE_TOLERANCE,
    CausalityResult,
    measure_causality,
    occlude,
)
from streambench.harness.runs.interface import Outcome, RunContext, RunProtocol, SweepPoint
from streambench.protocols.causality import CausalityConfig, measured_label

__all__ = [
    "RESULT_FILE",
    "SEQUENCE_TOLERANCE",
    "CausalityProtocol",
    "CausalityResult",
    "causality_figures",
    "execute_causality",
    "occlude",
]


def execute_causality(
    config: RunConfig,
    causality: CausalityConfig,
    progress: ProgressHook | None = None,
    max_streams: int | None = None,
) -> tuple[CausalityResult, Path]:
    """Run every causality check on ``config``'s adapter and data; write ``<run_dir>/causality.json``.

    ``max_streams`` (default: the configuration's ``streams``) bounds the streams used. ``progress`` is
    called after each run."""
    if max_streams is not None:
        if max_streams < 1:
            raise ValueError(f"max_streams must be >= 1, got {max_streams}")
        causality = causality.model_copy(update={"streams": max_streams})
    outcome = CausalityProtocol().execute(config, causality, progress)
    return outcome.result, outcome.run_dir


class CausalityProtocol(RunProtocol[CausalityConfig, CausalityResult]):
    name = "causality"
    summary = "occlusion, state leak, caching, timed/untimed, gradient flow, sequence equivalence (§6.2.3)"
    result_file = RESULT_FILE
    figure_keys = (r"check\[[^\[\],:]+\]", "check[<causality check>]")
    result_model = CausalityResult
    config_model = CausalityConfig
    config_file = True  # --protocol-config: cuts, seed, tolerance, streams checked, ...
    sweepable = True
    run_options = frozenset()  # its configuration's `sealed` decides its worker: --in-process is ignored

    def measure(self, run: RunContext[CausalityConfig, CausalityResult]) -> CausalityResult:
        return measure_causality(run)

    def print_result(self, console: Console, outcome: Outcome[CausalityResult]) -> int:
        """The table of checks; exit code 1 when any failed."""
        result = outcome.result
        print_causality(console, result.report, result.skipped)
        return 0 if result.report.passed else 1

    def headline(self, result: CausalityResult) -> list[Figure]:
        return causality_figures(result)

    def report_sections(self) -> tuple[SectionSpec, ...]:
        return (SectionSpec("causality", "Causality checks", causality_section),)

    def sweep_row(
        self, figures: dict[str, float | None], point: str | None
    ) -> tuple[dict[str, float | None], dict[str, float | None]]:
        checks = [v for k, v in figures.items() if k.startswith("check[") and v is not None]
        return {"checks passed": float(sum(checks)), "checks run": float(len(checks))}, {}

    def sweep_trees(
        self, run_tree: dict[str, Any], protocol_tree: dict[str, Any], seed: int, point: SweepPoint | None
    ) -> None:
        protocol_tree["noise_seed"] = seed
        super().sweep_trees(run_tree, protocol_tree, seed, point)


def causality_figures(result: CausalityResult) -> list[Figure]:
    """Every check as 1 (passed) or 0 (failed) (seed 004 §6.2.3); a skipped check is ``null`` with the
    reason."""
    figures = [
        Figure(
            key=f"check[{check.name}]",
            label=f"causality check {check.name}",
            unit="check",
            better="higher",
            value=1.0 if check.passed else 0.0,
            reason=None if check.passed else check.detail or "failed",
        )
        for check in result.report.checks
    ]
    for name, why in result.skipped.items():
        figures.append(
            Figure(
                key=f"check[{name}]",
                label=f"causality check {name}",
                unit="check",
                better="higher",
                value=None,
                reason=f"skipped: {why}",
            )
        )
    return figures


def _measured(name: str, value: float) -> Markup | str:
    """What a check measured, named (:func:`streambench.protocols.causality.measured_label`); no figure as
    missing."""
    label = measured_label(name, value)
    return missing(label) if math.isinf(value) else label


def causality_section(bundle: RunBundle) -> Markup:
    causal = bundle.results.get("causality")
    if not isinstance(causal, CausalityResult):
        return absent(bundle.missing.get("causality", "no causality.json"))
    report = causal.report
    verdict = (
        Markup('<span class="pass">passed</span>')
        if report.passed
        else Markup('<span class="fail">FAILED</span>')
    )
    rows = []
    for check in report.checks:
        where = ""
        if check.first_stream is not None:
            where = f"stream {check.first_stream}, frame {check.first_frame}"
            if check.first_source is not None:
                where += f", input {check.first_source}"
        rows.append(
            (
                check.name,
                Markup('<span class="pass">pass</span>')
                if check.passed
                else Markup('<span class="fail">fail</span>'),
                where,
                _measured(check.name, check.max_difference),
                check.detail,
            )
        )
    skipped = concat(markup("<li>{}: {}</li>", name, why) for name, why in causal.skipped.items())
    return (
        markup("<p>Causality checks of adapter {}: {}.</p>", causal.adapter, verdict)
        + table(["check", "result", "first offence", "measured", "detail"], rows)
        + (markup("<p>Skipped:</p><ul>{}</ul>", skipped) if skipped else Markup())
    )
