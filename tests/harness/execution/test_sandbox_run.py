"""The sealed worker's sandbox in a real run (issue 24 item 3; the sandbox itself: test_sandbox.py). A
planted model that reads the results store (adapters/offenders/file_reader.py, the path hidden from the
harness as a model would hard-code it) raises what it read when it can: under the default sandbox it
cannot, and the run is clean; with --sandbox off it can, and every stream fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution.adapter_errors import AdapterError
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.sandbox import landlock_abi
from streambench.harness.runs.session import execute_run

LANDLOCK = landlock_abi()[0] >= 1


def _config(store: Path, sandbox: str, secret: Path) -> RunConfig:
    return RunConfig(
        adapter="offender-file-reader",
        adapter_options={"path_hex": str(secret).encode().hex()},
        data=SyntheticConfig(num_streams=2, duration_s=2.0),
        engine={"warmup_frames": 10},  # type: ignore[arg-type]
        output_dir=store,
        isolation=IsolationConfig(sandbox=sandbox),  # type: ignore[arg-type]
    )


@pytest.mark.processes
@pytest.mark.skipif(not LANDLOCK, reason=f"no Landlock here: {landlock_abi()[1]}")
def test_a_model_reading_the_results_store_finds_nothing_in_the_sandbox(tmp_path: Path) -> None:
    secret = tmp_path / "earlier-run" / "result.json"
    secret.parent.mkdir()
    secret.write_text('{"labels": "the answers"}')
    result, _, _ = execute_run(_config(tmp_path, "require", secret))
    assert result.execution.sandbox is not None and result.execution.sandbox.status == "sandboxed"
    assert not result.failures  # the read failed inside the model, which then answered honestly
    # without the sandbox it reads the store, and says so at its first frame (of the warm-up)
    with pytest.raises(AdapterError, match=r"read the data: .*earlier-run/result\.json"):
        execute_run(_config(tmp_path, "off", secret).model_copy(update={"run_id": "open"}))


def test_require_refuses_where_landlock_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where Landlock is unavailable (simulated), auto runs and says why; require refuses."""
    from streambench.harness.execution import sandbox

    monkeypatch.setattr(sandbox, "landlock_abi", lambda: (0, "simulated: no Landlock"))
    # in this process: the seccomp filter would stay for the rest of the test session
    monkeypatch.setattr(sandbox, "refuse_new_processes", lambda: (False, "not installed in the test process"))
    record = sandbox.enter_sandbox(sandbox.SandboxPolicy(read_paths=[], write_dir=str(tmp_path)), "auto")
    assert record.status == "unsandboxed" and record.reason == "simulated: no Landlock"
    with pytest.raises(sandbox.SandboxUnavailableError, match="--sandbox require"):
        sandbox.enter_sandbox(sandbox.SandboxPolicy(read_paths=[], write_dir=str(tmp_path)), "require")
