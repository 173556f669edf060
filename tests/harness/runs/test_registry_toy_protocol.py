"""A seventh protocol, defined in this test alone, reaches every place a protocol is used (issue 14):
``streambench run --protocol``, the run store (``runs`` / ``show``), ``compare --fail-on``, the HTML
report and a sweep, with no change to harness code: registering it is all it takes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.datasets.catalog import make_streams
from streambench.harness.execution.config import RunConfig, run_id_for
from streambench.harness.execution.engine import Engine
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.execution.setup import build_adapter
from streambench.harness.report.bundle import RunBundle, SectionSpec
from streambench.harness.report.html import Markup, markup
from streambench.harness.results.headline import Figure
from streambench.harness.runs import registry
from streambench.harness.runs.catalog import fix_data_seed, write_indexed
from streambench.harness.runs.interface import Outcome, RunProtocol
from streambench.harness.runs.parts import Printed, Reported, Swept


class ToyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    streams: int = 2


class ToyResult(BaseModel):
    run_id: str
    created_at: datetime
    adapter: str
    streams: int
    frames: int
    mean_top_score: float


class ToyProtocol(Printed, Reported, Swept, RunProtocol):
    """Runs the adapter on the first ``streams`` streams and reports the mean of its top score."""

    name = "toy"
    summary = "the mean top score of the first streams"
    result_file = "toy.json"
    figure_keys = (r"toy\.\w+", "toy.<figure>")
    result_model = ToyResult
    config_model = ToyConfig
    config_file = True

    def execute(self, run: RunConfig, config: BaseModel | None, progress: ProgressHook | None) -> Outcome:
        assert isinstance(config, ToyConfig)
        run, _ = fix_data_seed(run)  # a protocol fixes the data set's seed once per run (issue 24)
        streams = make_streams(run.data)[: config.streams]
        engine = Engine(build_adapter(run, streams[0]), run.engine)
        recordings = [engine.run_stream(s) for s in streams]
        top = np.concatenate([r.scores.max(axis=1) for r in recordings])
        run_id = run.run_id or run_id_for(run.adapter, self.name)
        result = ToyResult(
            run_id=run_id,
            created_at=datetime.now(timezone.utc),
            adapter=run.adapter,
            streams=len(streams),
            frames=sum(r.num_frames for r in recordings),
            mean_top_score=float(top.mean()),
        )
        return Outcome(result, write_indexed(run.output_dir, run_id, self.result_file, result))

    def print_result(self, console: Console, outcome: Outcome) -> int:
        assert isinstance(outcome.result, ToyResult)
        console.print(f"toy: mean top score {outcome.result.mean_top_score:.6f}")
        return 0

    def headline(self, result: BaseModel) -> list[Figure]:
        assert isinstance(result, ToyResult)
        return [
            Figure(
                key="toy.score", label="mean top score", unit="", better="higher", value=result.mean_top_score
            ),
            Figure(key="toy.frames", label="frames", unit="", better="higher", value=float(result.frames)),
        ]

    def report_sections(self) -> tuple[SectionSpec, ...]:
        return (SectionSpec("toy", "Toy protocol", _section),)


def _section(bundle: RunBundle) -> Markup:
    result = bundle.results.get("toy")
    if not isinstance(result, ToyResult):
        return markup("<p>Not shown: {}</p>", bundle.missing.get("toy", "no toy.json"))
    return markup(
        '<p class="toy">toy mean top score {:.6f} over {} frames</p>', result.mean_top_score, result.frames
    )


@pytest.fixture
def toy() -> Iterator[ToyProtocol]:
    protocol = ToyProtocol()
    registry.register(protocol)
    yield protocol
    registry.unregister(protocol.name)


def _run(root: Path, run_id: str, adapter: str, *extra: str) -> Any:
    args = ["run", "--protocol", "toy", "--adapter", adapter, "--streams", "3", "--duration", "5"]
    args += ["--warmup-frames", "0", "--output-dir", str(root), "--run-id", run_id, "--no-progress", *extra]
    return CliRunner().invoke(app, args)


def test_a_protocol_registered_in_a_test_runs_lists_compares_and_reports(
    toy: ToyProtocol, tmp_path: Path
) -> None:
    root = tmp_path / "results"
    config = tmp_path / "toy.toml"
    config.write_text("streams = 1\n")
    first = _run(root, "toy-ref", "reference", "--protocol-config", str(config))
    assert first.exit_code == 0, first.output
    assert "toy: mean top score" in first.output and (root / "toy-ref" / "toy.json").is_file()
    written = json.loads((root / "toy-ref" / "toy.json").read_text())
    assert written["streams"] == 1 and written["frames"] == 125  # 5 s at 25 fps, one stream
    second = _run(root, "toy-null", "null")
    assert second.exit_code == 0, second.output

    runner = CliRunner()
    listed = runner.invoke(app, ["runs", "--results-dir", str(root), "--json"])
    assert listed.exit_code == 0, listed.output
    heads = {h["run"]: h for h in json.loads(listed.output)}
    assert set(heads) == {"toy-ref", "toy-null"} and heads["toy-ref"]["protocols"] == ["toy"]
    figures = {f["key"]: f["value"] for f in heads["toy-ref"]["figures"]}
    assert figures["toy.score"] == pytest.approx(written["mean_top_score"]) and figures["toy.frames"] == 125

    shown = runner.invoke(app, ["show", "toy-ref", "--results-dir", str(root)])
    assert shown.exit_code == 0 and "mean top score" in shown.output

    # compare gates on the toy's figure like any other: the null adapter's scores are all 0
    compared = runner.invoke(
        app, ["compare", "toy-ref", "toy-null", "--results-dir", str(root), "--fail-on", "toy.score:-0.1"]
    )
    assert compared.exit_code == 1, compared.output
    assert "toy.score" in compared.output or "mean top score" in compared.output

    report = tmp_path / "report.html"
    made = runner.invoke(
        app, ["report", "toy-ref", "toy-null", "--results-dir", str(root), "-o", str(report)]
    )
    assert made.exit_code == 0, made.output
    html = report.read_text()
    assert 'id="run0-toy"' in html and 'class="toy"' in html and "over 125 frames" in html


@pytest.mark.processes
def test_a_protocol_registered_in_a_test_sweeps(toy: ToyProtocol, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        "[sweep]\nname = 'toy'\n"
        f"output_dir = '{tmp_path / 'store'}'\n"
        "[run]\ndata = { kind = 'synthetic', num_streams = 2, duration_s = 5.0 }\n"
        "engine = { warmup_frames = 0 }\n"
        "[[adapters]]\nadapter = 'reference'\n[[adapters]]\nadapter = 'null'\n"
        "[protocols.toy]\nconfig = { streams = 1 }\n"
    )
    done = CliRunner().invoke(app, ["sweep", str(sweep), "--no-progress"])
    assert done.exit_code == 0, done.output
    written = sorted((tmp_path / "store").glob("*/toy.json"))
    assert len(written) == 2 and all(json.loads(p.read_text())["streams"] == 1 for p in written)


def test_an_unknown_protocol_says_which_exist() -> None:
    bad = CliRunner().invoke(app, ["run", "--protocol", "robustnes", "--no-progress"])
    assert bad.exit_code == 2
    assert "did you mean 'robustness'" in bad.output and "online" in bad.output
