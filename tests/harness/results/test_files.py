"""The run's result files (harness/results/files.py): a corrupt arrays file and a bad result.json are
named."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.results.files import ResultFileError, load_recordings, load_result
from streambench.harness.runs.session import execute_run
from tests.harness.runs.test_session import small


@pytest.mark.processes
def test_corrupt_arrays_file_is_named(tmp_path: Path) -> None:
    execute_run(small(tmp_path, data={"num_streams": 2}))
    (tmp_path / "run" / "arrays.npz").write_bytes(b"not a zip")
    with pytest.raises(ResultFileError, match=r"arrays\.npz: not a readable arrays file"):
        load_recordings(tmp_path / "run")
    res = CliRunner().invoke(app, ["score", "online", str(tmp_path / "run")])
    assert res.exit_code == 2 and "not a readable arrays file" in res.output


def test_result_files_are_checked_on_load(tmp_path: Path) -> None:
    (tmp_path / "result.json").write_text('{"schema_version": 99}')
    with pytest.raises(ResultFileError, match="schema_version 99 is not supported"):
        load_result(tmp_path)
    (tmp_path / "result.json").write_text('{"schema_version": 1,\n "run_id": ')
    with pytest.raises(ResultFileError, match="line 2: not valid JSON"):
        load_result(tmp_path / "result.json")
    (tmp_path / "result.json").write_text('{"schema_version": 3}')
    with pytest.raises(ResultFileError, match="does not match the result schema"):
        load_result(tmp_path)
