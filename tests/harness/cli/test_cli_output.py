"""What the command line prints, as a user reads it (issue 17): one way of showing F1, tables whole in a CI
log, ``--json`` on every command, shell completion of commands and values.

The CI-log and completion tests run ``streambench`` in a subprocess with no terminal on any of its
descriptors, as a CI runner has it (a CliRunner inside a developer's terminal still has a tty on fd 0).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from streambench.harness.cli import app, completion
from streambench.harness.datasets import catalog
from tests.support import run_streambench

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A small online run made through the CLI: (its store, its run id, what ``run`` printed)."""
    store = tmp_path_factory.mktemp("cli-output") / "results"
    small = ["--duration", "2", "--streams", "4", "--no-report", "--no-progress", "--run-id", "small"]
    made = CliRunner().invoke(
        app,
        ["run", *small, "--output-dir", str(store)],
        env={"COLUMNS": "200"},
        catch_exceptions=False,
    )
    assert made.exit_code == 0, made.output
    return store, "small", made.output


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.mark.processes
def test_f1_is_a_percentage_in_run_show_and_runs(results: tuple[Path, str, str]) -> None:
    """``run`` printed F1 in percent while ``show`` / ``runs`` printed a fraction: now all print the same
    percentage of the same stored fraction (result.json keeps the fraction)."""
    store, run_id, printed = results
    stored = json.loads((store / run_id / "result.json").read_text())["metrics"]["headline"]["f1_strict"][0]
    estimate = stored["estimate"]
    assert 0.0 < estimate < 1.0
    run_line = re.search(r"F1@0 ms Strict ([\d.]+) \[", printed)
    assert run_line is not None and float(run_line.group(1)) == pytest.approx(estimate * 100, abs=0.05)
    runner = CliRunner()
    shown = runner.invoke(app, ["show", run_id, "--results-dir", str(store)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert f"{estimate * 100:.2f} %" in shown.output
    assert f"{estimate:.4f}" not in shown.output
    listed = runner.invoke(app, ["runs", "--results-dir", str(store)], env={"COLUMNS": "200"})
    f1_100 = json.loads(runner.invoke(app, ["show", run_id, "--results-dir", str(store), "--json"]).output)
    (figure,) = [f for f in f1_100["figures"] if f["key"] == "f1@100ms"]
    assert figure["unit"] == "%" and f"F1@100ms {figure['value'] * 100:.2f} %" in listed.output


@pytest.mark.processes
def test_a_table_in_a_ci_log_is_not_clipped_at_80_columns(results: tuple[Path, str, str]) -> None:
    store, run_id, _ = results
    done = run_streambench(["runs", "--results-dir", str(store)], store)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if run_id in line)
    assert "RTF" in row and "F1@100ms" in row  # the whole headline on the run's one line
    assert max(len(line) for line in done.stdout.splitlines()) > 80
    narrow = run_streambench(["runs", "--results-dir", str(store)], store, COLUMNS="80")
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80  # COLUMNS, when set, is obeyed


def _commands(group: typer.Typer) -> dict[str, list[str]]:
    """Every leaf command of the application and the names of its parameters."""
    found: dict[str, list[str]] = {}

    def walk(command: Any, path: str) -> None:
        subcommands = getattr(command, "commands", None)  # a group (typer ships its own click)
        if subcommands:
            for name, sub in subcommands.items():
                walk(sub, f"{path} {name}".strip())
        else:
            found[path] = [p.name or "" for p in command.params]

    walk(typer.main.get_command(group), "")
    return found


def test_every_command_has_json_output() -> None:
    commands = _commands(app)
    assert {"run", "sweep", "report", "runs", "show", "reindex", "compare", "ab", "adapters"} <= set(commands)
    lacking = [name for name, params in commands.items() if "as_json" not in params and name != "schema"]
    assert lacking == []  # schema prints JSON Schema whatever is asked


@pytest.mark.processes
def test_json_of_reindex_report_and_rescoring(results: tuple[Path, str, str], tmp_path: Path) -> None:
    store, run_id, _ = results
    runner = CliRunner()
    reindexed = runner.invoke(app, ["reindex", "--results-dir", str(store), "--json"])
    assert reindexed.exit_code == 0 and json.loads(reindexed.output)["indexed"] == [run_id]
    html = tmp_path / "r.html"
    written = runner.invoke(app, ["report", run_id, "--results-dir", str(store), "-o", str(html), "--json"])
    assert written.exit_code == 0, written.output
    assert json.loads(written.output) == {"report": str(html), "runs": [run_id]} and html.is_file()
    rescored = runner.invoke(app, ["score", "online", str(store / run_id), "--json"])
    stored = json.loads((store / run_id / "result.json").read_text())["metrics"]
    assert json.loads(rescored.output)["headline"]["f1_strict"] == stored["headline"]["f1_strict"]


def test_sweep_json_lists_the_planned_runs(tmp_path: Path) -> None:
    planned = CliRunner().invoke(
        app, ["sweep", str(ROOT / "examples" / "sweep.toml"), "--dry-run", "--json", "--output-dir", "store"]
    )
    assert planned.exit_code == 0, planned.output
    doc = json.loads(planned.output)
    assert doc["total"] == len(doc["runs"]) == doc["to_run"] > 1
    assert {r["status"] for r in doc["runs"]} == {"to run"}


def _complete(words: str, cwd: Path) -> list[str]:
    done = run_streambench(
        [],
        cwd,
        _STREAMBENCH_COMPLETE="complete_bash",
        COMP_WORDS=words,
        COMP_CWORD=str(len(words.split()) - 1),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.processes
def test_shell_completion_of_commands_and_values(results: tuple[Path, str, str]) -> None:
    store, run_id, _ = results
    assert _complete("streambench ru", store) == ["run", "runs"]
    assert "offender-peeking" in _complete("streambench run --adapter offender-", store)
    assert _complete("streambench run --protocol cau", store) == ["causality"]
    assert _complete(f"streambench show --results-dir {store} sm", store) == [run_id]
    assert _complete("streambench show sm", store.parent) == [run_id]  # ./results, the default
    assert _complete("streambench show sm", store) == []  # no ./results here


def test_the_completed_data_set_kinds_are_the_ones_run_builds() -> None:
    assert set(completion.datasets("")) == set(catalog._LOADERS) - {"synthetic_spoof"}
