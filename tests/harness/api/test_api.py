"""The Python API (issue 26, item 2): docs/python.md's notebook examples run verbatim, and
``streambench.run`` is the command line's entry point (same configuration, same defaults)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import streambench
from streambench.harness.cli.config import RunOptions, build_run_config

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "python.md"


def _notebook_blocks() -> list[str]:
    return re.findall(r"```python\n(# notebook.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_the_page_has_its_examples() -> None:
    assert len(_notebook_blocks()) == 2


@pytest.mark.slow
def test_the_notebook_examples_run_verbatim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_block, ab_block = _notebook_blocks()
    namespace: dict[str, object] = {}
    exec(compile(run_block, str(PAGE), "exec"), namespace)
    outcome = namespace["outcome"]
    assert isinstance(outcome, streambench.Outcome) and isinstance(outcome.result, streambench.RunResult)
    assert (tmp_path / outcome.run_dir / "result.json").is_file()
    assert outcome.result.metrics.f1_at(1000.0) > 0.3  # the reference model learns the synthetic classes
    exec(compile(ab_block, str(PAGE), "exec"), namespace)
    report = namespace["report"]
    assert isinstance(report, streambench.ABReport)
    assert report.execution == "sealed" and report.verdict != "no regression"  # 30 % slower, gate at 10 %


def test_the_python_entry_point_has_the_command_lines_defaults() -> None:
    """No second set of defaults: a RunConfig made in Python equals the one the command line makes from
    the same choices (its defaults for the rest)."""
    typed = RunOptions.model_validate({"adapter": "null", "streams": 4, "duration": 2.0})
    from_cli = build_run_config(typed, set())
    in_python = streambench.RunConfig(
        adapter="null", data={"kind": "synthetic", "num_streams": 4, "duration_s": 2.0}
    )
    assert from_cli.model_dump(exclude={"data"}) == in_python.model_dump(exclude={"data"})
    assert from_cli.data.model_dump(exclude={"seed"}) == in_python.data.model_dump(exclude={"seed"})


def test_run_refuses_a_configuration_of_another_protocol() -> None:
    config = streambench.RunConfig(adapter="null")
    other = streambench.RoundsConfig()
    with pytest.raises(ValueError, match="protocol_config: the online protocol takes"):
        streambench.run(config, protocol_config=other)
    with pytest.raises(ValueError, match="did you mean 'online'"):
        streambench.run(config, protocol="onlien")


def test_run_refuses_options_the_protocol_would_ignore_as_the_command_line_does(tmp_path: Path) -> None:
    """The hysteresis protocol builds its own streams: a data set chosen in the configuration is refused
    from Python as ``--streams`` is on the command line, before anything runs; left at its defaults it is
    not chosen."""
    from streambench.harness.runs.contract import options_set

    chosen = streambench.RunConfig.model_validate(
        {"adapter": "null", "data": {"num_streams": 3}, "output_dir": tmp_path}
    )
    assert options_set(chosen) == {"streams"}
    with pytest.raises(ValueError, match="builds its own streams: use --protocol-config, not --streams"):
        streambench.run(chosen, protocol="hysteresis")
    assert not any(tmp_path.iterdir())
    plain = streambench.RunConfig.model_validate({"adapter": "null", "output_dir": tmp_path})
    assert options_set(plain) == frozenset()
    typed = streambench.RunConfig.model_validate(
        {"isolation": {"sealed": False}, "on_error": "stop", "data": {"seed": 1}}
    )
    assert options_set(typed) == {"sealed", "on_error", "seed"}


def test_each_checked_option_sets_the_field_the_command_lines_table_says() -> None:
    from streambench.harness.cli.options import RUN_OPTIONS
    from streambench.harness.runs.contract import OPTION_FIELDS

    table = {option.name: option.sets for option in RUN_OPTIONS}
    assert {name: table[name] for name in OPTION_FIELDS} == OPTION_FIELDS


SMALL_RUN = {
    "adapter": "null",
    "data": {"kind": "synthetic", "num_streams": 3, "duration_s": 2.0, "seed": 0},
    "engine": {"warmup_frames": 10},
    "isolate": False,
}


@pytest.mark.parametrize("given", ["x", None, 3, ["adapter", "null"]], ids=["str", "None", "int", "list"])
def test_what_is_no_configuration_is_a_type_error_naming_the_argument(given: object) -> None:
    """Before: an AttributeError deep in harness/runs/session.py ('str' object has no attribute ...)."""
    with pytest.raises(TypeError, match=r"^config: expected a streambench.RunConfig or a mapping of its"):
        streambench.run(given)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^head: expected a streambench.RunConfig"):
        streambench.ab(streambench.RunConfig(adapter="null"), given)  # type: ignore[arg-type]


def test_rounds_and_progress_that_are_none_of_theirs_are_type_errors_naming_the_argument() -> None:
    """Checked before anything runs: ``rounds="x"`` was an AttributeError ('str' object has no attribute
    'mode') deep in the rounds, ``progress="x"`` a TypeError ('str' object is not callable) mid-run."""
    config = streambench.RunConfig(adapter="null")
    with pytest.raises(TypeError, match=r"^rounds: expected a streambench.RoundsConfig or None, got a str"):
        streambench.ab(config, config, rounds="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^progress: expected a callable or None, got a str \('x'\)"):
        streambench.ab(config, config, progress="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^progress: expected a callable or None, got a int \(3\)"):
        streambench.run(config, progress=3)  # type: ignore[arg-type]


def test_an_output_dir_that_is_a_file_is_a_value_error_naming_it(tmp_path: Path) -> None:
    """As ``--output-dir``: refused before anything runs (it was a NotADirectoryError once the run began)."""
    (tmp_path / "afile").write_text("")
    for output_dir, what in (("afile", "is a file"), ("afile/sub", "is inside .*afile, which is a file")):
        config = streambench.RunConfig(adapter="null", output_dir=tmp_path / output_dir)
        with pytest.raises(ValueError, match=rf"^output_dir .*{output_dir}: {what}, not a directory$"):
            streambench.run(config)


@pytest.mark.processes
def test_a_mapping_of_run_config_fields_is_validated_into_one(tmp_path: Path) -> None:
    """Decided (docs/python.md): a mapping is a configuration file's table, validated as RunConfig
    validates one; a bad field is the ValueError that names it."""
    outcome = streambench.run({**SMALL_RUN, "output_dir": tmp_path, "run_id": "mapped"})
    assert outcome.run_dir == tmp_path / "mapped" and outcome.result.adapter == "null"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"data\.synthetic\.num_streams"):
        streambench.run({**SMALL_RUN, "data": {"kind": "synthetic", "num_streams": "many"}})


@pytest.mark.parametrize(
    "isolate", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["in-process", "sealed"]
)
@pytest.mark.parametrize(
    ("adapter", "options", "says"),
    [
        ("no_such_module_anywhere:Model", {}, "cannot import module 'no_such_module_anywhere'"),
        ("null", {"bogus": 1}, "adapter 'null' has no option 'bogus'"),
    ],
    ids=["missing-module", "unknown-option"],
)
def test_an_adapter_that_cannot_be_built_is_the_value_error_the_page_promises(
    tmp_path: Path, isolate: bool, adapter: str, options: dict[str, object], says: str
) -> None:
    """docs/python.md: "run raises ValueError naming the field when the configuration cannot be run";
    before, a sealed worker's report of it was a WorkerError (a RuntimeError)."""
    config = {**SMALL_RUN, "adapter": adapter, "adapter_options": options, "isolate": isolate}
    with pytest.raises(ValueError, match=says):
        streambench.run({**config, "output_dir": tmp_path})


@pytest.mark.processes
@pytest.mark.parametrize(
    "isolate", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["in-process", "sealed"]
)
def test_ctrl_c_in_a_loop_reaches_the_caller_with_what_was_measured_kept(
    tmp_path: Path, isolate: bool
) -> None:
    """Ctrl-C (a real SIGINT, sent by the progress hook once two streams of the second run are done)
    stops the loop as KeyboardInterrupt; before, the run returned an "incomplete" outcome and the loop
    went on. The interrupted run's measured streams are on disk and ``resume`` finishes it."""
    import os
    import signal

    def ctrl_c_in_the_second_run(done: int, total: int, stream_id: str) -> None:
        if len(finished) == 1 and done == 2:
            os.kill(os.getpid(), signal.SIGINT)

    finished: list[Path] = []
    with pytest.raises(KeyboardInterrupt, match=r"interrupted .*what was measured is kept") as caught:
        for run_id in ("first", "second", "third"):
            config = {**SMALL_RUN, "isolate": isolate, "output_dir": tmp_path, "run_id": run_id}
            finished.append(streambench.run(config, progress=ctrl_c_in_the_second_run).run_dir)
    assert finished == [tmp_path / "first"] and not (tmp_path / "third").exists()
    assert f"streambench run --resume {tmp_path / 'second'}" in str(caught.value)
    kept = streambench.RunResult.model_validate_json((tmp_path / "second" / "result.json").read_text())
    assert kept.status == "incomplete" and kept.scored.scored_streams == 2
    resumed = streambench.resume(tmp_path / "second")  # as streambench run --resume
    assert resumed.run_dir == tmp_path / "second" and not resumed.unchanged
    assert resumed.result.status == "complete" and resumed.result.scored.scored_streams == 3
    again = streambench.resume(tmp_path / "second")
    assert again.unchanged and again.result.status == "complete"
