"""A capacity run under adapter failures and store faults (harness/runs/capacity.py), in process (fast):
the failure is recorded in capacity.json with the point's N, the live stream, the data-set stream its
session played and the frame; the points decided before it are kept; the console says so in one line and
the exit code is run's (1: an adapter failure); capacity.json is written after every point, and a store that
turns read-only mid-search is named with what was measured so far (exit 2)."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.adapters.faulty import stream_fingerprint
from streambench.harness.cli import app
from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.runs import context as run_context
from streambench.harness.runs.capacity import fresh_sources
from streambench.protocols.capacity import CapacityConfig, point_duration_s

QUICK = {"streams": 2, "confidence": 0.5, "target_miss_rate": 0.2, "slack_misses": 0, "min_point_s": 0.5}
DATA = ["--streams", "2", "--duration", "2", "--seed", "4"]


def _second_point_fingerprint() -> str:
    """The first frame of the first session of the second point (N = 2): fresh sources drawn from the
    public seed 4 and that point's salt (2)."""
    data = SyntheticConfig(seed=4, num_streams=2, duration_s=2)
    config = CapacityConfig.model_validate(QUICK)
    sources = fresh_sources(data)
    assert sources is not None
    drawn = sources(2, point_duration_s(2, 25.0, config), 2)
    from streambench.harness.execution.sealed_feed import decode_frame

    return stream_fingerprint(decode_frame(drawn.encoded[0][0]))


def _invoke(tmp_path: Path, *extra: str) -> tuple[int, str, Path]:
    config = tmp_path / "capacity.toml"
    config.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in QUICK.items()) + "\n")
    command = ["run", "--protocol", "capacity", "--in-process", "--no-progress", "--no-report"]
    command += ["--protocol-config", str(config), *DATA, "--output-dir", str(tmp_path / "r"), "--run-id", "c"]
    done = CliRunner().invoke(app, [*command, *extra])
    return done.exit_code, done.output, tmp_path / "r" / "c" / "capacity.json"


@pytest.mark.processes
def test_a_failure_at_n_2_is_recorded_with_its_stream_and_frame_and_n_1_is_kept(tmp_path: Path) -> None:
    options = ["--adapter", "faulty", "--option", "fault=raise", "--option", "at_frame=5"]
    options += ["--option", f"stream_fingerprint={_second_point_fingerprint()}"]
    code, output, path = _invoke(tmp_path, *options)
    assert code == 1, output
    assert "Traceback" not in output and "╭" not in output  # no rich traceback
    lines = [line for line in output.splitlines() if line.startswith("adapter failure")]
    assert len(lines) == 1
    assert "N = 2, stream 0 (syn-0000) frame 5: RuntimeError: planted fault at frame 5" in lines[0]
    saved = json.loads(path.read_text())
    score = saved["score"]
    assert saved["schema_version"] == 2 and score["status"] == "failed"
    assert [p["streams"] for p in score["curve"]] == [1] and score["curve"][0]["passed"]
    failure = score["failure"]
    assert (failure["streams"], failure["stream"], failure["source"], failure["frame"]) == (
        2,
        0,
        "syn-0000",
        5,
    )
    assert failure["kind"] == "error" and failure["error_type"] == "RuntimeError"
    assert "planted fault at frame 5" in failure["traceback"]


@pytest.mark.processes
def test_capacity_json_is_written_after_every_point_and_a_read_only_store_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[dict[str, object]] = []
    real = run_context.atomic_write_text

    def read_only_after_the_first(path: Path, text: str) -> Path:
        written.append(json.loads(text))
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(run_context, "atomic_write_text", read_only_after_the_first)
    code, output, path = _invoke(tmp_path, "--adapter", "faulty")
    assert code == 2, output
    assert (
        "error: could not write" in output and "capacity.json after N = 2 (Read-only file system)" in output
    )
    assert "measured so far: N = 1 passes, N = 2 passes" in output
    first = json.loads(path.read_text())  # the first point's file, written before the store turned
    assert first["score"]["status"] == "searching" and [p["streams"] for p in first["score"]["curve"]] == [1]
    assert written and [p["streams"] for p in written[0]["score"]["curve"]] == [1, 2]  # type: ignore[index]
    assert real is not read_only_after_the_first


@pytest.mark.processes
def test_a_search_stopped_mid_way_is_incomplete_and_a_used_run_id_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streambench.harness.runs import registry

    monkeypatch.setattr(
        run_context, "atomic_write_text", lambda path, text: (_ for _ in ()).throw(KeyboardInterrupt)
    )
    code, output, path = _invoke(tmp_path, "--adapter", "faulty")
    assert code == 130, output  # interrupted after the first point: its file is kept, status searching
    protocol = registry.get("capacity")
    kept = protocol.load_result(path.parent)
    assert protocol.incomplete_reason(kept) == "the search stopped after N = 1"  # type: ignore[attr-defined]
    monkeypatch.undo()
    again, said, _ = _invoke(tmp_path, "--adapter", "faulty")
    assert again == 2 and "exists already" in said and "adapter failure" not in said
