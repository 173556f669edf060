"""What a protocol's ``measure()`` is handed (harness/runs/context.py): the model, the result with its
identity and environment filled in, and a result file written atomically, never over a measured one,
once per result, and indexed once."""

from __future__ import annotations

from pathlib import Path

import pytest

from streambench.harness.execution.config import RunConfig
from streambench.harness.results.files import EnvironmentRecord, RunRecord
from streambench.harness.runs import context as run_context
from streambench.harness.runs.context import RunContext


class Counted(EnvironmentRecord):
    frames: int


class Plain(RunRecord):
    frames: int


def _context(tmp_path: Path, model: type[RunRecord], **fields: object) -> RunContext[None, RunRecord]:
    run = RunConfig.model_validate(
        {
            "adapter": "null",
            "data": {"kind": "synthetic", "num_streams": 2, "duration_s": 1.0, "seed": 5},
            "engine": {"warmup_frames": 3},
            "isolate": False,
            "output_dir": str(tmp_path),
        }
    )
    return RunContext(run, None, "r", "public", None, model, "counted.json", **fields)  # type: ignore[arg-type]


@pytest.mark.processes
def test_the_result_records_the_run_the_model_and_its_environment(tmp_path: Path) -> None:
    run = _context(tmp_path, Counted)
    with run.model() as model:
        frames = sum(model.run_stream(s, "test").num_frames for s in run.streams())
    result = run.result(frames=frames)
    assert isinstance(result, Counted) and (result.run_id, result.adapter, result.frames) == ("r", "null", 50)
    assert (result.execution_mode, result.dataset_seed_kind) == ("in-process", "public")
    assert run.adapter_module == "streambench.adapters.null"
    assert result.environment is not None and result.fingerprint == run.environment()[1]
    assert result.environment.seeds.value["dataset"] == 5  # type: ignore[index]
    plain = _context(tmp_path, Plain).result(frames=1)  # no environment record: identity only
    assert set(plain.model_dump()) == {"schema_version", "run_id", "created_at", "adapter", "frames"}


@pytest.mark.processes
def test_a_protocol_that_builds_its_own_streams_names_no_seed_kind(tmp_path: Path) -> None:
    run = _context(tmp_path, Counted, own_streams=True)
    run.adapter_module = "streambench.adapters.null"
    assert run.result(frames=0).dataset_seed_kind is None  # derived from run.data: its seed is given
    assert run.result(frames=0, dataset_seed_kind="secret").dataset_seed_kind == "secret"  # fields win


def test_the_environment_needs_the_adapter_named(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="open model"):
        _context(tmp_path, Counted).environment()


def test_a_result_is_written_once_indexed_once_and_never_over_a_measured_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed: list[Path] = []
    monkeypatch.setattr(run_context, "index_written", indexed.append)
    run = _context(tmp_path, Plain)
    first = run.result(frames=1)
    assert run.save(first, index=False) == tmp_path / "r" and indexed == []
    later = run.result(frames=2)
    run.save(later)  # a protocol that writes as it goes replaces its own file
    run.save(later)  # the base saves what measure() returns: written and indexed already
    assert Plain.model_validate_json((tmp_path / "r" / "counted.json").read_text()).frames == 2
    assert indexed == [tmp_path / "r"]
    again = _context(tmp_path, Plain)  # another run of the same id
    with pytest.raises(ValueError, match=r"counted\.json: exists already; give the run another --run-id"):
        again.save(again.result(frames=3))
    written: list[str] = []
    again.save(again.result(frames=4), files=lambda d: written.append(d.name), replace=True)
    assert written == ["r"]  # the files it accompanies first
    assert Plain.model_validate_json((tmp_path / "r" / "counted.json").read_text()).frames == 4
