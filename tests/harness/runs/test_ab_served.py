"""``streambench ab`` between two endpoints (docs/serving.md): the same example server reached directly
(base) and through a proxy that holds every chunk 5 ms each way (head), both benchmarked end to end from
sealed workers. The head's 10 ms more per frame is a regression.

``--force``: the server and the proxy run in this process, on the client's two cores, so the client's
thread is preempted on most frames and the measurement is INVALID, for which ``ab`` calls no regression
unless forced (a server on another machine does not take the client's cores)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from tests.adapters.served.servers import delay_proxy, websocket_server

pytestmark = pytest.mark.slow  # sealed workers

ARGS = ["--streams", "2", "--duration", "2", "--seed", "3", "--warmup-frames", "5", "--rounds", "6"]
ARGS += ["--streams-per-round", "1", "--restart-every", "0", "--no-progress", "--json", "--force"]


def _ab(base_url: str, head_url: str) -> tuple[int, dict[str, object]]:
    sides = ["--base-adapter", "websocket", "--base-option", f"url={base_url}"]
    sides += ["--head-adapter", "websocket", "--head-option", f"url={head_url}"]
    done = CliRunner().invoke(app, ["ab", *sides, *ARGS], env={"COLUMNS": "200"})
    return done.exit_code, json.loads(done.output)


def test_the_endpoint_behind_a_slower_network_is_a_regression() -> None:
    with websocket_server() as url:
        port = url.rpartition(":")[2]
        with delay_proxy(f"127.0.0.1:{port}", 0.005) as proxied:
            code, report = _ab(url, f"ws://127.0.0.1:{proxied}")
    assert report["execution"] == "sealed"
    assert code == 1 and report["verdict"] == "regression", report
    p50 = next(e for e in report["gate"]["effects"] if e["key"] == "p50")  # type: ignore[index]
    assert p50["head_median"] - p50["base_median"] >= 10_000_000  # ns: 5 ms each way on every frame
