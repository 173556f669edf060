"""A protocol states only what it adds (issue 26, item 4): the core of :class:`RunProtocol` (identity,
``execute``, its result and figures) is enough to run, list, show and report it; printing, resuming,
report sections and sweeping are opt-in parts (harness/runs/parts.py) whose absence has a default."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig, run_id_for
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.results.headline import Figure
from streambench.harness.runs import parts, registry
from streambench.harness.runs.catalog import write_indexed
from streambench.harness.runs.interface import Outcome, RunProtocol


class CountResult(BaseModel):
    run_id: str
    created_at: datetime
    adapter: str
    letters: int


class CountProtocol(RunProtocol):
    """The core only: counts the letters of the adapter's name (no model is run)."""

    name = "letters"
    summary = "the letters of the adapter's name"
    result_file = "letters.json"
    result_model = CountResult
    figure_keys = (r"letters", "letters")

    def execute(self, run: RunConfig, config: BaseModel | None, progress: ProgressHook | None) -> Outcome:
        run_id = run.run_id or run_id_for(run.adapter, self.name)
        result = CountResult(
            run_id=run_id,
            created_at=datetime.now(timezone.utc),
            adapter=run.adapter,
            letters=len(run.adapter),
        )
        return Outcome(result, write_indexed(run.output_dir, run_id, self.result_file, result))

    def headline(self, result: BaseModel) -> list[Figure]:
        assert isinstance(result, CountResult)
        return [Figure(key="letters", label="letters", unit="", better="higher", value=float(result.letters))]


@pytest.fixture
def letters() -> Iterator[CountProtocol]:
    protocol = CountProtocol()
    registry.register(protocol)
    yield protocol
    registry.unregister(protocol.name)


def test_a_core_only_protocol_runs_shows_and_reports(letters: CountProtocol, tmp_path: Path) -> None:
    args = ["run", "--protocol", "letters", "--adapter", "busywait", "--output-dir", str(tmp_path)]
    done = CliRunner().invoke(app, [*args, "--run-id", "one", "--no-progress"], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert "letters: the letters of the adapter's name" in done.output and "letters: 8" in done.output
    shown = CliRunner().invoke(app, ["show", str(tmp_path / "one")], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "letters" in shown.output, shown.output
    assert (tmp_path / "one" / "report.html").read_text().count("letters") > 0


def test_the_parts_a_protocol_lacks_fall_back(letters: CountProtocol, tmp_path: Path) -> None:
    assert not parts.sweepable(letters) and not parts.can_resume(letters, tmp_path)
    assert parts.report_sections(letters) == () and parts.closing_note(letters, None) is None  # type: ignore[arg-type]
    online = registry.get("online")
    assert parts.sweepable(online) and isinstance(online, parts.Resumable) and parts.report_sections(online)


def test_a_sweep_refuses_a_protocol_without_the_sweep_part(letters: CountProtocol, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.toml"
    sweep.write_text("[[adapters]]\nadapter = 'null'\n[protocols.letters]\n")
    done = CliRunner().invoke(app, ["sweep", str(sweep), "--dry-run"])
    assert done.exit_code == 2 and "protocols.letters: not a protocol a sweep runs" in done.output, (
        done.output
    )
