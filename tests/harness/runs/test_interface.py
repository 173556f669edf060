"""The template (harness/runs/interface.py): the base runs a protocol that writes only ``measure`` and
``headline`` — its seed fixed once, its run named, an existing result refused before anything runs, its
result's identity filled in, written and indexed — and docs/python.md's protocol, written against the
public API alone (examples/throughput.py), runs through it."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

import streambench
from streambench.harness.results import store
from streambench.harness.runs import registry
from streambench.harness.runs.catalog import load_headline

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "throughput.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("throughput_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def throughput() -> Iterator[Any]:
    protocol = _example().ThroughputProtocol()
    streambench.register(protocol)
    yield protocol
    registry.unregister(protocol.name)


def _config(tmp_path: Path, **update: Any) -> streambench.RunConfig:
    fields: dict[str, Any] = {
        "adapter": "busywait",
        "adapter_options": {"duration_us": 2000},
        "data": {"kind": "synthetic", "num_streams": 3, "duration_s": 1.0},
        "engine": {"warmup_frames": 5},
        "isolate": False,  # in process: this tier starts no worker
        "output_dir": str(tmp_path),
        **update,
    }
    return streambench.RunConfig.model_validate(fields)


def test_the_docs_show_the_example_file() -> None:
    code = EXAMPLE.read_text().split('"""', 2)[2].strip()
    assert f"```python\n{code}\n```" in (ROOT / "docs" / "python.md").read_text()


def test_the_example_protocol_runs_is_written_indexed_and_headlined(throughput: Any, tmp_path: Path) -> None:
    outcome = streambench.run(_config(tmp_path), protocol="throughput")
    result = outcome.result
    written = json.loads((outcome.run_dir / "throughput.json").read_text())
    assert written["run_id"] == outcome.run_dir.name == result.run_id and written["adapter"] == "busywait"
    assert outcome.run_dir.name.endswith(written["run_id"][-6:]) and "-busywait-throughput-" in result.run_id
    assert written["schema_version"] == 1 and written["created_at"].endswith("Z")
    # its configuration's default (2 streams) of 1 s at 25 frames/s; a busy wait of 2 ms a frame: at most
    # 500 frames a second, whatever the machine's load (a slower machine only lowers it)
    assert result.frames == 2 * 25
    assert result.seconds >= result.frames * 0.002 and result.fps == pytest.approx(
        result.frames / result.seconds
    )
    assert 0 < result.fps <= 500
    indexed = {head.run: head for head in store.indexed(tmp_path)}
    figure = next(f for f in indexed[result.run_id].figures if f.key == "throughput.fps")
    assert figure.value == pytest.approx(result.fps) and figure.n_frames == 50
    assert load_headline(outcome.run_dir).protocols == ["throughput"]


class _Record(streambench.RunRecord):
    seed: int | None
    seed_kind: str | None
    streams: int


class _Probe(streambench.RunProtocol[None, _Record]):
    """Measures nothing: records what the base handed it."""

    name = "probe"
    summary = "what the base hands measure()"
    result_file = "probe.json"
    result_model = _Record
    default_adapter = "null"
    calls = 0

    def measure(self, run: streambench.RunContext[None, _Record]) -> _Record:
        type(self).calls += 1
        seed = getattr(run.run.data, "seed", None)
        return run.result(seed=seed, seed_kind=run.seed_kind, streams=len(run.streams()))

    def headline(self, result: _Record) -> list[streambench.Figure]:
        return []


@pytest.fixture
def probe() -> Iterator[_Probe]:
    protocol = _Probe()
    _Probe.calls = 0
    streambench.register(protocol)
    yield protocol
    registry.unregister(protocol.name)


def test_the_base_fixes_a_secret_seed_names_the_run_and_takes_the_default_adapter(
    probe: _Probe, tmp_path: Path
) -> None:
    config = _config(tmp_path, adapter="reference", adapter_options={})  # the run's default adapter
    outcome = streambench.run(config, protocol="probe")
    result = outcome.result
    assert result.adapter == "null" and "-null-probe-" in result.run_id  # the protocol's default_adapter
    assert result.seed_kind == "secret" and isinstance(result.seed, int) and result.streams == 3
    given = streambench.run(_config(tmp_path, data={"kind": "synthetic", "seed": 7}), protocol="probe")
    assert (given.result.seed, given.result.seed_kind) == (7, "public")


def test_an_existing_result_is_refused_before_anything_runs(probe: _Probe, tmp_path: Path) -> None:
    streambench.run(_config(tmp_path, run_id="once"), protocol="probe")
    before = (tmp_path / "once" / "probe.json").read_bytes()
    with pytest.raises(ValueError, match=r"probe\.json: exists already; give the run another --run-id"):
        streambench.run(_config(tmp_path, run_id="once"), protocol="probe")
    assert _Probe.calls == 1 and (tmp_path / "once" / "probe.json").read_bytes() == before


class _Settings(BaseModel):
    streams: int = 1


class _Configured(_Probe, streambench.RunProtocol[_Settings, _Record]):  # type: ignore[misc]
    name = "configured"
    config_model = _Settings
    seen: ClassVar[list[_Settings]] = []

    def measure(self, run: streambench.RunContext[Any, _Record]) -> _Record:
        type(self).seen.append(run.config)
        return super().measure(run)


def test_a_protocol_run_without_its_configuration_gets_its_defaults(tmp_path: Path) -> None:
    protocol = _Configured()
    streambench.register(protocol)
    try:
        outcome = protocol.execute(_config(tmp_path), None, None)
    finally:
        registry.unregister(protocol.name)
    assert _Configured.seen == [_Settings()] and outcome.result.run_id == outcome.run_dir.name
