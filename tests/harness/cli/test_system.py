"""``streambench env | selftest | schema`` (harness/cli/system.py): the manifest with the reason for
every null item, the selftest's exit code, the published JSON schema of result.json."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.runs.session import execute_run
from tests.harness.runs.test_session import small

runner = CliRunner()


@pytest.mark.processes
def test_env_prints_the_manifest_with_reasons_for_null_items() -> None:
    res = runner.invoke(app, ["env", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert len(doc["fingerprint"]) == 16
    assert doc["torch_version"]["value"].startswith("2.")
    assert all(
        item["reason"] for item in doc.values() if isinstance(item, dict) and item.get("value") is None
    )


def test_selftest_exit_code_follows_its_verdict() -> None:
    res = runner.invoke(app, ["selftest", "--json"])
    report = json.loads(res.output)
    assert res.exit_code == (0 if report["passed"] else 1)
    assert [row["duration_us"] for row in report["busy_wait"]] == [100.0, 1000.0, 10000.0]


@pytest.mark.processes
def test_result_json_validates_against_the_published_json_schema(tmp_path: Path) -> None:
    execute_run(small(tmp_path, data={"num_streams": 2}))
    printed = CliRunner().invoke(app, ["schema"])
    assert printed.exit_code == 0
    schema = json.loads(printed.output)
    document = json.loads((tmp_path / "run" / "result.json").read_text())
    jsonschema.validate(document, schema)
    document["metrics"]["overall"]["speed"]["latency"]["p95_ms"] = "fast"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, schema)
