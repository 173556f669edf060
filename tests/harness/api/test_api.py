"""The Python API (issue 26, item 2): docs/python.md's notebook examples run verbatim, and
``streambench.run`` is the command line's entry point (same configuration, same defaults)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import streambench
from streambench.harness.cli.config import RunOptions, build_run_config

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "python.md"


def _notebook_blocks() -> list[str]:
    return re.findall(r"```python\n(# notebook.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_the_page_has_its_examples() -> None:
    assert len(_notebook_blocks()) == 2


@pytest.mark.slow
def test_the_notebook_examples_run_verbatim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_block, ab_block = _notebook_blocks()
    namespace: dict[str, object] = {}
    exec(compile(run_block, str(PAGE), "exec"), namespace)
    outcome = namespace["outcome"]
    assert isinstance(outcome, streambench.Outcome) and isinstance(outcome.result, streambench.RunResult)
    assert (tmp_path / outcome.run_dir / "result.json").is_file()
    assert outcome.result.metrics.f1_at(1000.0) > 0.3  # the reference model learns the synthetic classes
    exec(compile(ab_block, str(PAGE), "exec"), namespace)
    report = namespace["report"]
    assert isinstance(report, streambench.ABReport)
    assert report.execution == "sealed" and report.verdict != "no regression"  # 30 % slower, gate at 10 %


def test_the_python_entry_point_has_the_command_lines_defaults() -> None:
    """No second set of defaults: a RunConfig made in Python equals the one the command line makes from
    the same choices (its defaults for the rest)."""
    typed = RunOptions.model_validate({"adapter": "null", "streams": 4, "duration": 2.0})
    from_cli = build_run_config(typed, set())
    in_python = streambench.RunConfig(
        adapter="null", data={"kind": "synthetic", "num_streams": 4, "duration_s": 2.0}
    )
    assert from_cli.model_dump(exclude={"data"}) == in_python.model_dump(exclude={"data"})
    assert from_cli.data.model_dump(exclude={"seed"}) == in_python.data.model_dump(exclude={"seed"})


def test_run_refuses_a_configuration_of_another_protocol() -> None:
    config = streambench.RunConfig(adapter="null")
    other = streambench.RoundsConfig()
    with pytest.raises(ValueError, match="protocol_config: the online protocol takes"):
        streambench.run(config, protocol_config=other)
    with pytest.raises(ValueError, match="did you mean 'online'"):
        streambench.run(config, protocol="onlien")
