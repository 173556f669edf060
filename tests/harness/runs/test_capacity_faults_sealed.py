"""A capacity run under adapter failures in sealed serving workers (end-to-end: slow tier). Every fault of
the planted faulty adapter (adapters/faulty.py), at a batch of more than one frame, ends the search with the
failure in capacity.json naming N, the live stream, its data-set stream and the frame (and the batch), one
line on the console, exit 1, no traceback; the run's ``--frame-timeout`` ends a batch that hangs and its
``--memory-limit-mb`` stops a replica that grows (both reach the serving workers); a serving worker killed
with SIGKILL is named (its pid, the signal, what it was serving)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from streambench.adapters.faulty import stream_fingerprint
from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.sealed_feed import decode_frame
from streambench.harness.runs.capacity import execute_capacity, fresh_sources
from streambench.protocols.capacity import CapacityConfig, point_duration_s

pytestmark = pytest.mark.slow

# N = 1 and N = 4, a loose bound; batched: a frame waits up to a whole period for the others, so every batch
# of the N = 4 point holds frames of several streams
BATCHED = {
    "streams": 4,
    "confidence": 0.5,
    "target_miss_rate": 0.2,
    "slack_misses": 0,
    "min_point_s": 1.0,
    "deadline_ms": 200,
    "serving": "batched",
    "max_batch": 8,
    "max_wait_us": 40_000,
    "budget_s": 60,
}
DATA = ["--streams", "2", "--duration", "2", "--seed", "4"]
CLI = [sys.executable, "-c", "from streambench.harness.cli import main; main()"]


def _fingerprint(settings: dict[str, object], live: int = 4, salt: int = 2) -> str:
    """The first frame of the first session of the second point (its fresh sources, public seed 4)."""
    sources = fresh_sources(SyntheticConfig(seed=4, num_streams=2, duration_s=2))
    assert sources is not None
    config = CapacityConfig.model_validate(settings)
    drawn = sources(live, point_duration_s(live, 25.0, config), salt)
    return stream_fingerprint(decode_frame(drawn.encoded[0][0]))


def _run(
    tmp_path: Path, settings: dict[str, object], *options: str, timeout: float = 240
) -> tuple[int, str, dict]:  # type: ignore[type-arg]
    config = tmp_path / "capacity.toml"
    config.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in settings.items()) + "\n")
    command = [*CLI, "run", "--protocol", "capacity", "--no-progress", "--no-report", "--protocol-config"]
    command += [str(config), *DATA, "--output-dir", str(tmp_path / "r"), "--run-id", "c", *options]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    path = tmp_path / "r" / "c" / "capacity.json"
    saved = json.loads(path.read_text()) if path.is_file() else {}
    return done.returncode, done.stdout + done.stderr, saved


@pytest.mark.parametrize("fault", ["raise", "nan", "shape", "short", "long", "nothing", "exit", "segv"])
def test_every_fault_at_a_batch_of_several_frames_is_recorded(tmp_path: Path, fault: str) -> None:
    options = ["--adapter", "faulty", "--option", f"fault={fault}", "--option", "at_frame=3"]
    options += ["--option", "max_batch_size=8", "--option", f"stream_fingerprint={_fingerprint(BATCHED)}"]
    code, output, saved = _run(tmp_path, BATCHED, *options)
    assert code == 1, output
    assert "Traceback" not in output and "╭" not in output
    (line,) = [line for line in output.splitlines() if line.startswith("adapter failure at N = 4, stream ")]
    failure = saved["score"]["failure"]
    # the batch is named whole (a call that fails as a whole names its first frame), the faulty frame in it
    assert failure["streams"] == 4 and any("(syn-0000) frame 3" in item for item in failure["batch"])
    if fault in ("nan", "shape"):  # one stream's output in the batch: that stream and frame exactly
        assert (failure["source"], failure["frame"]) == ("syn-0000", 3) and len(failure["batch"]) == 1
    else:
        assert len(failure["batch"]) > 1 and "(a batch of" in line  # several streams' frames in that batch
    assert [p["streams"] for p in saved["score"]["curve"]] == [1]  # N = 1 kept
    if fault in ("exit", "segv"):
        assert failure["kind"] == "died" and "(pid " in failure["message"]
        assert ("exited with code 13" if fault == "exit" else "killed by SIGSEGV") in failure["message"]


# what a model writes to its serving worker's connection, or does to it (adapters/faulty.py): the failure's
# kind, error type and words (before: the framed garbage's reply "starts with b'g'"; the unframed bytes a
# read of 1.7 GB waiting forever; the closed connection an OSError traceback of the worker on the console)
PIPE_FAULTS = {
    "garbage": ("error", "BadReply", "the worker sent what is no reply: b'garbage bytes, not a reply'"),
    "raw": ("error", "BadReply", "sent what is no reply: a message of 1,734,439,522 bytes announced"),
    "close_fds": ("died", "WorkerEnded", "exited with code 74: its connection to the harness failed inside"),
}


@pytest.mark.parametrize("fault", list(PIPE_FAULTS))
def test_what_a_model_does_to_its_connection_is_a_recorded_failure(tmp_path: Path, fault: str) -> None:
    """The serving worker's replies are read as untrusted input (harness/execution/serving_lanes.py): each
    of these faults at frame 3 of a stream of the N = 4 point is that point's failure, at that frame's
    batch, with the worker named; the points before are kept; no traceback, no wait."""
    options = ["--adapter", "faulty", "--option", f"fault={fault}", "--option", "at_frame=3"]
    options += ["--option", "max_batch_size=8", "--option", f"stream_fingerprint={_fingerprint(BATCHED)}"]
    code, output, saved = _run(tmp_path, BATCHED, *options, timeout=120)
    assert code == 1, output
    assert "Traceback" not in output and "╭" not in output and "OSError" not in output, output
    assert [line for line in output.splitlines() if line.startswith("adapter failure at N = 4, stream ")]
    failure = saved["score"]["failure"]
    kind, error_type, says = PIPE_FAULTS[fault]
    assert (failure["kind"], failure["error_type"]) == (kind, error_type), failure
    assert says in failure["message"] and failure["worker"] == 0, failure
    assert fault == "garbage" or "the serving worker (pid " in failure["message"], failure
    assert failure["streams"] == 4 and any("(syn-0000) frame 3" in item for item in failure["batch"]), failure
    assert [p["streams"] for p in saved["score"]["curve"]] == [1]  # N = 1 kept


def test_a_batch_that_hangs_is_ended_at_the_frame_timeout(tmp_path: Path) -> None:
    options = ["--adapter", "faulty", "--option", "fault=hang", "--option", "at_frame=3"]
    options += ["--option", "max_batch_size=8", "--option", f"stream_fingerprint={_fingerprint(BATCHED)}"]
    code, output, saved = _run(tmp_path, BATCHED, *options, "--frame-timeout", "2", timeout=100)
    assert code == 1, output
    failure = saved["score"]["failure"]
    assert failure["kind"] == "timeout" and "2 s (frame timeout)" in failure["message"]
    assert saved["run"]["isolation"]["frame_timeout_s"] == 2


def test_a_replica_growing_past_the_memory_limit_is_stopped(tmp_path: Path) -> None:
    replicas = {**BATCHED, "serving": "replicas", "max_wait_us": 0, "deadline_ms": 400}
    options = ["--adapter", "faulty", "--option", "fault=leak", "--option", "leak_mb_per_frame=64"]
    options += ["--option", "at_frame=1", "--option", f"stream_fingerprint={_fingerprint(replicas)}"]
    code, output, saved = _run(tmp_path, replicas, *options, "--memory-limit-mb", "300")
    assert code == 1, output
    failure = saved["score"]["failure"]
    assert failure["error_type"] == "MemoryError" or failure["kind"] == "died", failure


def test_a_serving_worker_killed_with_sigkill_is_named(tmp_path: Path) -> None:
    """The worker is killed while it serves the N = 1 point (from the progress hook, as a frame arrives)."""
    run = RunConfig.model_validate(
        {
            "adapter": "busywait",
            "adapter_options": {"duration_us": 2000},
            "data": {"seed": 4, "num_streams": 2, "duration_s": 2},
            "output_dir": tmp_path,
            "run_id": "k",
        }
    )

    class Killer:
        killed = False

        def __call__(self, done: int, total: int, what: str) -> None:
            pass

        def frames(self, what: str, done: int, total: int | None) -> None:
            if done > 5 and not self.killed:
                self.killed = True
                for pid in _serving_pids():
                    os.kill(pid, signal.SIGKILL)
                    break

    config = CapacityConfig.model_validate({**BATCHED, "serving": "replicas", "streams": 2, "min_point_s": 3})
    result, run_dir = execute_capacity(run, config, Killer())
    failure = result.score.failure
    assert failure is not None and failure.kind == "died" and failure.streams == 1
    assert "killed by SIGKILL" in failure.message and "(pid " in failure.message
    assert failure.stream == 0 and failure.frame is not None  # what it was serving
    assert json.loads((run_dir / "capacity.json").read_text())["score"]["status"] == "failed"


def _serving_pids() -> list[int]:
    """This process's serving workers (children running the sealed worker), oldest first."""
    me = os.getpid()
    found = []
    for entry in sorted(os.listdir("/proc"), key=lambda e: int(e) if e.isdigit() else 0):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmd:
                line = cmd.read()
        except (OSError, ValueError, IndexError):
            continue
        if parent == me and b"sealed_main" in line:
            found.append(int(entry))
    return found
