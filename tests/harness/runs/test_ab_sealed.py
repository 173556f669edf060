"""``streambench ab`` in sealed workers (issue 24: the adapter's process is untrusted).

Both sides run in sealed workers when both run this harness: the data set stays in this process, frames
are fed one at a time, and the parent's clock checks each worker's. A side whose clock disagrees with the
parent's in most rounds gets no verdict, pass or fail. A side from another checkout (an older commit: its
floors were top-level packages) runs as an isolated worker of its own harness, and both sides then run so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.rounds import RoundsConfig, Side, choose_execution
from streambench.harness.execution.worker_process import (
    WorkerCommand,
    default_pythonpath,
    harness_package,
    runs_this_harness,
)
from streambench.harness.runs.ab import run_ab

ROOT = Path(__file__).resolve().parents[3]
DATA = {"kind": "synthetic", "num_streams": 2, "duration_s": 3.0, "seed": 3}
ENGINE = {"warmup_frames": 5}
ROUNDS = RoundsConfig(rounds=6, streams_per_round=1, mode="interleaved", restart_every=None)
CHEAT = {"work_us": 2000}  # real work per frame; its own clock says ~0 (300 µs: under two CPU hogs its
# busy-wait got ~half a core, under the check's 0.2 ms of CPU, and was called in 2 of 6 rounds)
HONEST = {"duration_us": 2000}  # the same work, on the clock it reports. A 100 µs base was called in 1 of
# 6 rounds with no load: its worker's CPU outside predict() (0.03-0.25 ms a frame, 0.17 ms under two CPU
# hogs) stands at the check's 0.2 ms bar, which a 2 ms model's bar (a quarter of its figure) is well above


def _side(label: str, adapter: str, options: dict[str, object] | None = None, **command: object) -> Side:
    run = RunConfig(adapter=adapter, adapter_options=options or {}, data=DATA, engine=ENGINE)
    return Side(label=label, run=run, command=WorkerCommand.model_validate(command))


def test_the_default_sides_run_this_harness_and_are_sealed() -> None:
    base, head = _side("base", "null"), _side("head", "null")
    assert runs_this_harness(base.command) and harness_package(base.command) == "streambench.harness"
    assert choose_execution(base, head, None)[0] == "sealed"
    assert choose_execution(base, head, IsolationConfig(sealed=False)) == ("isolated", "--no-sealed")


@pytest.mark.processes
def test_a_stopped_clock_gets_no_verdict_when_sealed_and_passes_when_not() -> None:
    """The head does the base's work (a 2 ms busy-wait a frame) but stops its process's clock and waits on
    the real one: isolated, its figures are the stopped clock's and it sails through the gate (faster than
    the base); sealed, the parent's clock disagrees with the head's in most rounds, agrees with the honest
    base's, and the job calls nothing (exit 3), ``--force`` or not."""
    base, head = (
        _side("base", "busywait", HONEST),
        _side("head", "offender-stopped-clock", CHEAT),
    )
    sealed = run_ab(base, head, ROUNDS, (), force=True)
    assert sealed.execution == "sealed"
    cheat = sealed.sides[1]
    assert cheat.clock == "disagree" and len(cheat.clock_rounds) == sealed.pairs, cheat.clock_rounds
    assert sealed.verdict == "inconclusive" and sealed.exit_code == 3
    assert sealed.refusal is not None and "head" in sealed.refusal and "clock" in sealed.refusal
    assert sealed.sides[0].clock == "agree", sealed.sides[0].clock_rounds

    isolated = run_ab(base, head, ROUNDS, (), force=True, isolation=IsolationConfig(sealed=False))
    assert isolated.execution == "isolated" and isolated.sides[1].clock is None
    assert isolated.verdict == "no regression" and isolated.refusal is None  # the cheat, believed
    p50 = next(e for e in isolated.gate.effects if e.key == "p50")
    assert p50.ratio is not None and p50.ratio < 0.5  # "faster" than the same work done honestly


def test_a_side_of_another_interpreter_or_checkout_is_isolated(tmp_path: Path) -> None:
    other = tmp_path / "checkout"
    (other / "streambench").mkdir(parents=True)
    (other / "streambench" / "__init__.py").write_text("")
    moved = _side("head", "null", pythonpath=[str(other)])
    assert not runs_this_harness(moved.command)
    execution, why = choose_execution(_side("base", "null"), moved, None)
    assert execution == "isolated" and "head runs another checkout" in why
    assert not runs_this_harness(WorkerCommand(python="/usr/bin/env"))
    assert runs_this_harness(WorkerCommand(pythonpath=default_pythonpath()))


def test_the_harness_package_of_a_checkout_from_before_the_namespace(tmp_path: Path) -> None:
    old = tmp_path / "old"
    (old / "harness" / "execution").mkdir(parents=True)
    (old / "harness" / "execution" / "isolation_worker.py").write_text("")
    assert harness_package(WorkerCommand(pythonpath=[str(old)])) == "harness"
    assert harness_package(WorkerCommand(pythonpath=[str(tmp_path / "none")])) == "streambench.harness"
    assert harness_package(WorkerCommand(pythonpath=[str(ROOT)])) == "streambench.harness"


OLD_COMMIT = "b9bf0e4"  # the last commit whose floors were top-level packages (harness, protocols, adapters)


@pytest.mark.slow
def test_ab_against_a_checkout_from_before_the_namespace(tmp_path: Path) -> None:
    """The CI use of ``ab``: today's code against an older commit's checkout, each side its own harness."""
    old = tmp_path / "old"
    old.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", OLD_COMMIT], capture_output=True)
    if archive.returncode != 0:
        pytest.skip(f"commit {OLD_COMMIT} is not in this clone (a shallow checkout?)")
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
    args = ["ab", "--base-adapter", "null", "--base-path", str(old), "--streams", "2", "--duration", "2"]
    args += ["--warmup-frames", "5", "--rounds", "4", "--streams-per-round", "1", "--restart-every", "0"]
    args += ["--budget-s", "0"]  # one look
    result = CliRunner().invoke(app, [*args, "--no-progress", "--json"], env={"COLUMNS": "200"})
    assert result.exit_code in (0, 1, 3), result.output
    report = json.loads(result.output)
    assert report["execution"] == "isolated" and "base runs another checkout" in report["execution_reason"]
    assert report["pairs"] == 4
    base, head = report["sides"]
    assert base["pythonpath"] == [str(old)] and base["frames"] > 0 and head["frames"] > 0


@pytest.mark.processes
def test_the_old_checkout_worker_imports_its_own_harness(tmp_path: Path) -> None:
    """The bootstrap imports the package :func:`harness_package` names, from the side's path first."""
    old = tmp_path / "old"
    (old / "harness" / "execution").mkdir(parents=True)
    (old / "harness" / "__init__.py").write_text("")
    (old / "harness" / "execution" / "__init__.py").write_text("")
    (old / "harness" / "execution" / "isolation_worker.py").write_text(
        "import sys\ndef worker_main(*args):\n    print('OLD', __file__)\n    sys.exit(0)\n"
    )
    package = harness_package(WorkerCommand(pythonpath=[str(old)]))
    code = f"import importlib; importlib.import_module({package!r} + '.execution.isolation_worker')"
    code += ".worker_main()"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(old)},
        cwd=tmp_path,
    )
    assert done.stdout.startswith("OLD " + str(old)), done.stderr


def test_sides_that_frame_the_data_differently_are_refused_before_any_round() -> None:
    """Issue 27 item 5: per-frame latency compares only over the same frames."""
    base = _side("base", "null")
    faster = RunConfig(adapter="null", data={**DATA, "fps": 50.0}, engine=ENGINE)
    head = Side(label="head", run=faster)
    with pytest.raises(ValueError, match="the frames differ: base has 25 frames/s"):
        run_ab(base, head, ROUNDS, ())
