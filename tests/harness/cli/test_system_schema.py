"""``streambench schema [FILE]`` (harness/cli/system.py): the JSON Schema of any result file a registered
protocol writes (issue 28: ``capacity.json`` in ``streambench schema``), result.json by default, and one
line listing the files for a name no protocol writes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.results.files import RunResult
from streambench.harness.runs import registry
from streambench.harness.runs.capacity import CapacityResult


def _schema(*args: str) -> dict[str, object]:
    done = CliRunner().invoke(app, ["schema", *args])
    assert done.exit_code == 0, done.output
    printed: dict[str, object] = json.loads(done.stdout)
    return printed


def test_capacity_json_prints_the_capacity_result_schema() -> None:
    printed = _schema("capacity.json")
    assert printed == CapacityResult.model_json_schema()
    assert printed != RunResult.model_json_schema()
    assert "score" in printed["properties"]  # type: ignore[operator]


def test_the_default_is_result_json_unchanged() -> None:
    assert _schema() == RunResult.model_json_schema() == _schema("result.json")


@pytest.mark.parametrize("protocol", registry.names())
def test_every_protocols_result_file_is_accepted(protocol: str) -> None:
    chosen = registry.get(protocol)
    assert _schema(chosen.result_file) == chosen.result_model.model_json_schema()


def test_an_unknown_file_exits_2_with_one_line_listing_the_files() -> None:
    done = CliRunner().invoke(app, ["schema", "capacity.jsn"])
    assert done.exit_code == 2
    lines = done.output.strip().splitlines()
    assert len(lines) == 1, done.output
    assert lines[0].startswith("error:") and "'capacity.jsn'" in lines[0]
    for protocol in registry.protocols():
        assert protocol.result_file in lines[0]


def test_a_path_is_taken_by_its_file_name() -> None:
    """``streambench schema results/x/capacity.json``: the file a run wrote, named by its path."""
    assert _schema("results/x/capacity.json") == CapacityResult.model_json_schema()
    assert _schema("/tmp/run/result.json") == RunResult.model_json_schema()
    done = CliRunner().invoke(app, ["schema", "results/x/capacity.jsn"])
    assert done.exit_code == 2 and "'results/x/capacity.jsn'" in done.output
