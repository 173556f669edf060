"""Opt-outs that say so (harness/results/trust.py): a run without the sealed worker or without its sandbox
says it on its verdict lines and in ``--json``, and ``compare`` does not mix it with a sealed run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app

pytestmark = pytest.mark.slow

SMALL = ["--streams", "2", "--duration", "2", "--warmup-frames", "10", "--no-progress", "--no-report"]


def _run(tmp_path: Path, run_id: str, *args: str) -> dict:  # type: ignore[type-arg]
    result = CliRunner().invoke(
        app, ["run", *SMALL, "--output-dir", str(tmp_path), "--run-id", run_id, "--json", *args]
    )
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--no-sealed"], "not sealed (--no-sealed)"),
        (["--sandbox", "off"], "unsandboxed (sandbox off (--sandbox off))"),
        (["--in-process"], "in-process run (--in-process)"),
    ],
)
def test_an_opt_out_is_on_the_verdict_lines_and_in_json(tmp_path: Path, args: list[str], said: str) -> None:
    document = _run(tmp_path, "opted-out", *args)
    assert any(said in warning for warning in document["headline"]["warnings"]), document["headline"][
        "warnings"
    ]
    sealed = _run(tmp_path, "sealed")
    assert not any("sandbox" in w or "sealed" in w for w in sealed["headline"]["warnings"]), sealed


def test_compare_does_not_mix_a_sealed_run_with_an_unsandboxed_one(tmp_path: Path) -> None:
    _run(tmp_path, "sealed", "--seed", "1")
    _run(tmp_path, "unsandboxed", "--seed", "1", "--sandbox", "off")
    refused = CliRunner().invoke(app, ["compare", "--results-dir", str(tmp_path), "sealed", "unsandboxed"])
    assert refused.exit_code == 2 and "sealed, unsandboxed" in refused.output, refused.output
    forced = CliRunner().invoke(
        app, ["compare", "--results-dir", str(tmp_path), "sealed", "unsandboxed", "--force"]
    )
    assert (
        forced.exit_code in (0, 1, 3)
        and "forced: the adapters ran sealed and sealed, unsandboxed" in forced.output
    )
