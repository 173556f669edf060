"""The protocol registry (harness/runs/registry.py): the result file of a built-in protocol is known
without importing it, and is the one the protocol writes; a protocol registered in its place, or a new
one, answers for itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from streambench.harness.runs import registry
from streambench.harness.runs.online import OnlineProtocol


def test_the_built_in_result_files_are_the_ones_the_protocols_write() -> None:
    assert list(registry.BUILT_IN_FILES) == list(registry.BUILT_IN)
    written = {name: registry.get(name).result_file for name in registry.BUILT_IN}
    assert written == registry.BUILT_IN_FILES


def test_a_built_in_result_file_loads_no_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(name: str) -> None:
        raise AssertionError(f"protocol {name} loaded")

    monkeypatch.setattr(registry, "_loaded", {})
    monkeypatch.setattr(registry, "get", refuse)
    files = [registry.result_file(name) for name in registry.BUILT_IN]
    assert files == list(registry.BUILT_IN_FILES.values())


def test_a_protocol_registered_in_a_built_in_ones_place_names_its_own_file() -> None:
    class Renamed(OnlineProtocol):
        result_file = "renamed.json"

    registry.register(Renamed(), replace=True)
    try:
        assert registry.result_file("online") == "renamed.json"
    finally:
        registry.unregister("online")
    assert registry.result_file("online") == "result.json"


def test_a_run_no_protocol_can_resume_is_refused_by_the_protocol_that_wrote_it(tmp_path: Path) -> None:
    """``run --resume`` on a finished capacity run (capacity.json, no event log): the capacity protocol
    answers that it cannot resume a run; it said 'no such event log (was the run started by this
    streambench?)', the default protocol's word, of a run this streambench did start."""
    (tmp_path / registry.result_file("capacity")).write_text("{}")
    chosen = registry.resumer(tmp_path)
    assert chosen.name == "capacity"
    with pytest.raises(ValueError, match=r"the capacity protocol cannot resume a run"):
        chosen.resume(tmp_path, None)
    assert registry.resumer(tmp_path / "nothing").name == registry.DEFAULT
