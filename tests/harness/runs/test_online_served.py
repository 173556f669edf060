"""The online protocol against served models (docs/serving.md): the example WebSocket and gRPC servers
around the reference model, started on 127.0.0.1 by the test, benchmarked end to end by ``run`` with the
adapter in its sealed, sandboxed worker (which reaches the server: the sandbox does not restrict the
network). The served model scores the F1 of the in-process one; the result, the printed summary, the
report and ``compare`` show end to end, model-only and the serving overhead; a fault is the stream's
recorded failure at its frame and the run goes on."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

import streambench
from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.report.bundle import RunBundle
from streambench.harness.results.files import RunResult
from streambench.harness.results.summary import print_summary
from streambench.harness.runs import registry
from tests.adapters.served.servers import faulty_session, grpc_server, websocket_server

DATA = {"kind": "synthetic", "num_streams": 3, "duration_s": 2.0, "seed": 5}

pytestmark = pytest.mark.slow  # sealed workers: a subprocess per run


@contextlib.contextmanager
def _server(kind: str, handler: Any = None) -> Iterator[str]:
    with websocket_server(handler) if kind == "websocket" else grpc_server(handler) as url:
        yield url


def _run(tmp_path: Path, run_id: str, adapter: str, audit: bool = True, **options: object) -> RunResult:
    config = RunConfig.model_validate(
        {
            "adapter": adapter,
            "adapter_options": options,
            "data": DATA,
            "engine": {"warmup_frames": 5},
            "output_dir": tmp_path,
            "run_id": run_id,
            "protocol": {} if audit else {"audit": {"share": 0, "minimum": 0}},
        }
    )
    outcome = streambench.run(config)
    assert isinstance(outcome.result, RunResult)
    return outcome.result


@pytest.mark.parametrize("kind", ["websocket", "grpc"])
def test_a_served_model_scores_the_in_process_f1_and_shows_its_serving_overhead(
    tmp_path: Path, kind: str
) -> None:
    local = _run(tmp_path, "local", "reference")
    with _server(kind) as url:
        served = _run(tmp_path, "served", kind, url=url)
    assert served.execution.mode == "sealed" and not served.failures
    assert served.execution.sandbox is not None and served.execution.sandbox.status == "sandboxed"
    assert served.metrics.headline.f1_strict == local.metrics.headline.f1_strict  # every Δt, with intervals
    figures = served.metrics.overall.speed.served
    assert figures is not None and local.metrics.overall.speed.served is None
    assert figures.frames_with_figure == figures.frames == served.metrics.overall.speed.latency.n
    assert figures.model_only is not None and figures.end_to_end is not None
    assert figures.end_to_end.p50_ms == served.metrics.overall.speed.latency.p50_ms  # every frame has one
    assert figures.model_above_end_to_end == 0 and figures.overhead_p50_ms is not None
    assert figures.overhead_p50_ms > 0
    console = Console(record=True, width=200)
    print_summary(console, served)
    assert "model-only (server's word)" in console.export_text()
    protocol = registry.get("online")
    keys = {f.key: f for f in protocol.headline(served)}
    assert keys["model_only_p50"].value == pytest.approx(figures.model_only.p50_ms)
    assert keys["serving_overhead_p50"].value == pytest.approx(figures.overhead_p50_ms)
    bundle = RunBundle(run_dir=tmp_path / "served", name="served")
    protocol.read(tmp_path / "served", bundle)
    html = "".join(section.render(bundle) for section in protocol.report_sections())
    assert "server model-only p50 / p95 / p99" in html and "serving overhead p50 / p95 / p99" in html
    shown = CliRunner().invoke(app, ["compare", "local", "served", "--results-dir", str(tmp_path)])
    assert "server model-only p50" in shown.output and "serving overhead p50" in shown.output, shown.output


@pytest.mark.parametrize(
    ("kind", "fault", "says"),
    [
        ("websocket", "drop", "the connection was lost awaiting the reply to frame 7"),
        ("websocket", "silent", "no reply to frame 7 within 1 s (reply_timeout_s)"),
        ("websocket", "garbage", "malformed reply to frame 7: not JSON"),
    ],
)
def test_a_fault_is_the_streams_recorded_failure_at_its_frame_and_the_run_goes_on(
    tmp_path: Path, kind: str, fault: str, says: str
) -> None:
    """The first stream to reach frame 7 meets the fault (the warm-up stops at frame 5; no audit copy of a
    stream runs before it); the run records it at that stream and frame, scores it as answered wrongly
    and serves the others on new sessions."""
    with _server(kind, faulty_session(fault, at=7, times=1)) as url:
        served = _run(tmp_path, "served", kind, audit=False, url=url, reply_timeout_s=1.0)
    (failure,) = served.failures
    assert failure.frame == 7 and says in failure.message
    assert served.scored.failed_streams == 1 and served.scored.failure_rule == "wrong"
    assert served.scored.scored_streams == served.scored.planned_streams - 1
