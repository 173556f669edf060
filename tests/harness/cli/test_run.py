"""``streambench run`` (harness/cli/run.py): its summary, --json, and what it refuses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.results.files import load_result


@pytest.mark.processes
def test_unknown_adapter_and_bad_config_fail_clearly(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["run", "--adapter", "refernce", "--output-dir", str(tmp_path), "--no-progress"])
    assert res.exit_code == 2 and "Did you mean 'reference'" in res.output
    res = runner.invoke(app, ["run", "--streams", "0", "--output-dir", str(tmp_path), "--no-progress"])
    assert res.exit_code == 2 and "num_streams" in res.output
    res = runner.invoke(app, ["run", "-o", "smoothing", "--no-progress"])
    assert res.exit_code == 2 and "expected KEY=VALUE" in res.output


@pytest.mark.processes
def test_cli_run_prints_the_summary_and_score_reproduces_it(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(
        app, ["run", "--streams", "3", "--output-dir", str(tmp_path), "--run-id", "cli", "--no-progress"]
    )
    assert res.exit_code == 0, res.output
    assert "F1 Early-ok" in res.output and "p95" in res.output and "RTF" in res.output
    result = load_result(tmp_path / "cli")
    f1_500 = result.metrics.f1_at(500)
    row = re.search(r"│\s+500 │\s+([\d.]+) │.*", res.output)
    assert row is not None and float(row.group(1)) == pytest.approx(100 * f1_500, abs=0.051)
    rescored = runner.invoke(app, ["score", "online", str(tmp_path / "cli")])
    assert rescored.exit_code == 0, rescored.output
    assert re.search(r"│\s+500 │.*", rescored.output).group(0) == row.group(0)  # type: ignore[union-attr]
    listed = runner.invoke(app, ["adapters"])
    assert "reference-lookahead" in listed.output and "streambench.adapters.null:NullAdapter" in listed.output


@pytest.mark.processes
def test_a_protocol_refuses_to_join_a_run_of_another_adapter_or_data(tmp_path: Path) -> None:
    """Issue 17: the report's hint `--protocol robustness --run-id <run>` with another adapter would
    show a reference robustness run as the GRU's. The same adapter and data may join."""
    from typer.testing import CliRunner

    from streambench.harness.cli import app

    base = ["--streams", "2", "--duration", "5", "--warmup-frames", "0", "--output-dir", str(tmp_path)]
    base += ["--run-id", "r", "--no-progress", "--no-report"]
    assert CliRunner().invoke(app, ["run", *base, "--adapter", "null"]).exit_code == 0
    other = CliRunner().invoke(app, ["run", *base, "--protocol", "robustness"])
    assert other.exit_code == 2 and "another adapter" in other.output
    assert not (tmp_path / "r" / "robustness.json").exists()
    seed = CliRunner().invoke(
        app, ["run", *base, "--adapter", "null", "--protocol", "robustness", "--seed", "3"]
    )
    assert seed.exit_code == 2 and "data set" in seed.output


@pytest.mark.processes
def test_run_and_adapters_speak_json(tmp_path: Path) -> None:
    """Issue 17: --json for run (its directory, exit code and headline, nothing else on stdout) and for
    adapters (the registry, or one adapter's options)."""
    from typer.testing import CliRunner

    from streambench.harness.cli import app

    args = ["run", "--streams", "2", "--duration", "5", "--warmup-frames", "0", "--output-dir", str(tmp_path)]
    done = CliRunner().invoke(app, [*args, "--run-id", "j", "--no-progress", "--json"])
    assert done.exit_code == 0, done.output
    document = json.loads(done.stdout)
    assert document["exit_code"] == 0 and Path(document["run_dir"]).name == "j"
    assert document["headline"]["figures"][0]["key"] == "f1@0ms"
    assert (tmp_path / "j" / "report.html").is_file()
    registry = json.loads(CliRunner().invoke(app, ["adapters", "--json"]).stdout)
    assert registry["reference"].endswith(":CausalReferenceAdapter")
    options = json.loads(CliRunner().invoke(app, ["adapters", "null", "--json"]).stdout)
    assert [o["option"] for o in options["options"]] == ["classes"]
