"""Issue 18, "Tracebacks instead of errors": an adapter that cannot be loaded or built, or an output
directory that cannot be one, ends ``streambench run`` with one clear error naming the adapter (or the
option) and the cause, exit code 2; the traceback only with ``streambench --debug``."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app

SMALL = ["--streams", "2", "--duration", "5", "--warmup-frames", "0", "--no-progress", "--no-report"]
_names = itertools.count()

MODULES = {
    "syntax": ("class Model:\n    def broken(:\n        pass\n", "SyntaxError", "line 2"),
    "import": ("raise RuntimeError('no licence server at import')\n", "RuntimeError: no licence", "line 1"),
    "constructor": (
        "from tests.support import FailAtAdapter\n\n"
        "class Model(FailAtAdapter):\n"
        "    def __init__(self, options=None):\n"
        "        raise FileNotFoundError('weights.pt not found')\n",
        "Model() failed: FileNotFoundError: weights.pt not found",
        "line 5",
    ),
}


def _adapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str) -> tuple[str, str]:
    """A module with the fault, importable under a name not used before (imports are cached)."""
    name = f"broken_adapter_{fault}_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(MODULES[fault][0])
    monkeypatch.syspath_prepend(str(tmp_path))
    return name, f"{name}:Model"


@pytest.mark.processes
@pytest.mark.parametrize(
    ("fault", "isolate"),
    [("syntax", False), ("import", False), ("constructor", False), ("constructor", True)],
    ids=["syntax", "import", "constructor", "constructor-isolated"],
)
def test_an_adapter_that_cannot_be_built_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, isolate: bool
) -> None:
    module, adapter = _adapter(tmp_path, monkeypatch, fault)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{Path(__file__).resolve().parents[3]}")  # the worker
    args = ["run", "--adapter", adapter, "--output-dir", str(tmp_path / "out"), *SMALL]
    res = CliRunner().invoke(app, [*args, *(["--isolate"] if isolate else [])])
    assert res.exit_code == 2, res.output
    assert isinstance(res.exception, SystemExit)
    flat = " ".join(res.output.split())
    _, cause, line = MODULES[fault]
    assert f"adapter '{adapter}'" in flat and cause in flat and line in flat
    assert "Traceback" not in res.output and len(res.output.splitlines()) <= 6

    debug = CliRunner().invoke(app, ["--debug", *args])
    assert debug.exit_code == 2 and "Traceback" in debug.output and f"{module}.py" in debug.output


def test_an_output_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("not a directory")
    for where in (taken, taken / "below"):
        res = CliRunner().invoke(app, ["run", "--output-dir", str(where), *SMALL])
        assert res.exit_code == 2, res.output
        assert "--output-dir" in res.output and "not a directory" in res.output
        assert "Traceback" not in res.output
    assert taken.read_text() == "not a directory"


@pytest.mark.processes
def test_a_worker_that_does_not_start_ends_at_the_start_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--start-timeout``: a constructor that never returns (a download that hangs) ends the run at the
    limit typed, with the adapter and the limit named (the frame timeout, longer, is not what ends it)."""
    name = f"hung_start_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(
        "import time\n\nfrom tests.support import FailAtAdapter\n\n"
        "class Model(FailAtAdapter):\n"
        "    def __init__(self, options=None):\n"
        "        time.sleep(3600)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{Path(__file__).resolve().parents[3]}")  # the worker
    args = ["run", "--adapter", f"{name}:Model", "--output-dir", str(tmp_path / "out"), *SMALL]
    res = CliRunner().invoke(app, [*args, "--isolate", "--start-timeout", "2", "--frame-timeout", "600"])
    flat = " ".join(res.output.split())
    assert res.exit_code != 0, res.output
    assert "did not start and warm up within the start timeout of 2 s" in flat, res.output
    assert f"{name}:Model" in flat and "Traceback" not in res.output
