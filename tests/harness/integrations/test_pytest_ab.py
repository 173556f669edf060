"""The A/B latency gate of the pytest plugin, ``streambench_ab`` (harness/integrations/pytest_ab.py):
driven the way a project's CI drives it (``pytester.runpytest_subprocess`` on a fresh test file, the
plugin loaded from its ``pytest11`` entry point), and its configuration, the one ``ab --config``
takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.integrations.test_pytest_plugin import _run

pytest_plugins = ["pytester"]


AB_TEST = """
def test_gate(streambench_ab):
    report = streambench_ab(adapter="null", rounds=2, max_rounds=None, budget_s=None, streams=2,
                            streams_per_round=1, restart_every=None, mode="interleaved")
    assert report.pairs == 2 and report.mode == "interleaved"
"""


AB_SEEDED_TEST = """
import random


def test_gate(streambench_ab):
    report = streambench_ab(adapter="null", rounds=2, max_rounds=4, step=1, seed=1, streams=2,
                            streams_per_round=1, restart_every=None, mode="interleaved",
                            fail_inconclusive=False)
    assert report.planned_looks == 3  # 2 pairs, then one look per pair up to 4 (step 4: 2 looks)
    rng, expected = random.Random(1), []
    for _ in range(report.pairs):
        order = ["base", "head"]
        rng.shuffle(order)
        expected.append(" then ".join(order))
    assert report.orders == expected  # seed 1's orders (seed 0 starts base, base)
"""


@pytest.mark.processes
def test_ab_fixture_passes_step_and_seed(pytester: pytest.Pytester) -> None:
    # benchmarks/test_ab_gate_under_hogs.py gives every job its own seed
    pytester.makepyfile(test_ab=AB_SEEDED_TEST)
    result = _run(pytester)
    result.assert_outcomes(passed=1, warnings=1)


@pytest.mark.processes
def test_ab_fixture_runs_the_interleaved_gate(pytester: pytest.Pytester) -> None:
    # two pairs are too few for an interval: inconclusive, which fails the test (an undecided gate does not
    # pass), unless the run opts in to a warning
    pytester.makepyfile(test_ab=AB_TEST)
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*streambench ab: inconclusive*", "*too few rounds*", "*Undecided:*"])
    result = _run(pytester, "--streambench-strict")  # the old flag: the default now
    result.assert_outcomes(failed=1)
    result = _run(pytester, "--streambench-allow-inconclusive")
    result.assert_outcomes(passed=1, warnings=1)


# --- the A/B fixture takes the configuration `ab --config` takes (issue 27 item 6) ---------------------

ROOT = Path(__file__).resolve().parents[3]


VAD = ROOT / "examples" / "vad.toml"


AB_EXAMPLE = ROOT / "examples" / "test_vad_ab_example.py"


def test_the_fixture_takes_what_ab_config_takes() -> None:
    from streambench.harness.cli.ab import FROM_FILE
    from streambench.harness.integrations.pytest_ab import AB_CONFIG_FIELDS

    assert AB_CONFIG_FIELDS == FROM_FILE


def test_sides_from_the_vad_configuration_carry_its_data_engine_and_threads() -> None:
    from streambench.harness.integrations.pytest_ab import ab_sides

    base, head = ab_sides(None, config=VAD)
    for side in (base, head):
        assert side.run.adapter == "silero-vad" and side.run.data.kind == "audio_files"
        assert side.run.data.directory == Path("speech") and side.run.data.frame_samples == 512
        assert side.run.engine.warmup_frames == 100 and side.run.threads.intra_op == 1
    assert (base.label, head.label) == ("base", "head")
    # arguments laid over the file's: data replaced, engine and threads merged, the head's options added
    base, head = ab_sides(
        "silero-vad-onnx", {"threads": 2}, config=VAD, data={"kind": "synthetic", "num_streams": 2},
        engine={"cpu_time": "thread"}, threads={"intra_op": "torch"}, warmup_frames=7, torch_seed=3,
    )  # fmt: skip
    assert head.run.adapter == base.run.adapter == "silero-vad-onnx"
    assert head.run.adapter_options == base.run.adapter_options == {"threads": 2}
    assert head.run.data.kind == "synthetic" and head.run.data.num_streams == 2
    assert head.run.engine.warmup_frames == 7 and head.run.engine.cpu_time == "thread"
    assert head.run.threads.intra_op is None and head.run.torch_seed == 3


def test_without_a_configuration_the_synthetic_defaults_stand(tmp_path: Path) -> None:
    from streambench.harness.integrations.pytest_ab import ab_sides

    base, head = ab_sides("work", {"blocks": 110}, base_options={"blocks": 100}, streams=3, data_seed=5)
    assert base.run.data.kind == "synthetic" and base.run.data.num_streams == 3
    assert base.run.data.duration_s == 5.0 and base.run.data.seed == 5
    from streambench.harness.execution.engine import EngineConfig

    # the engine's own warm-up, as run and ab use it (one default, declared once)
    assert base.run.engine.warmup_frames == EngineConfig.model_fields["warmup_frames"].default == 100
    assert (base.run.adapter_options, head.run.adapter_options) == ({"blocks": 100}, {"blocks": 110})
    assert base.command.pythonpath == head.command.pythonpath


def test_a_bad_configuration_names_the_file_and_the_field(tmp_path: Path) -> None:
    from streambench.harness.integrations.pytest_ab import ab_sides
    from streambench.harness.io.config_file import ConfigError

    bad = tmp_path / "bad.toml"
    bad.write_text(
        'adapter = "silero-vad"\n[data]\nkind = "audio_files"\ndirectory = "speech"\nframe_samples = 0\n'
    )
    with pytest.raises(ConfigError, match=r"bad\.toml: invalid run configuration:\n  data\.frame_samples: "):
        ab_sides(None, config=bad)
    with pytest.raises(ConfigError, match="streams, data_seed apply to the synthetic data set, not to the"):
        ab_sides(None, config=VAD, streams=2, data_seed=1)
    with pytest.raises(ConfigError, match=r"give adapter=\.\.\., or a config"):
        ab_sides(None, config={"data": {"kind": "synthetic"}})
    with pytest.raises(ConfigError, match="no such configuration file"):
        ab_sides(None, config=tmp_path / "missing.toml")


BAD_CONFIG_TEST = """
def test_gate(streambench_ab):
    streambench_ab(config="bad.toml")
"""


@pytest.mark.slow
def test_a_bad_configuration_fails_the_test_with_one_message(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", bad='adapter = "null"\n[engine]\nwarmup_frames = -1\n')
    pytester.makepyfile(test_ab=BAD_CONFIG_TEST)
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*streambench_ab: bad.toml: invalid run configuration:*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.slow
def test_the_readme_audio_ab_example_runs_on_real_data(pytester: pytest.Pytester) -> None:
    # the README's example as it stands: Silero VAD on the generated recordings, the data, engine and
    # threads of examples/vad.toml (before issue 27 an audio adapter failed with "needs sample_rate_hz")
    pytest.importorskip("silero_vad")
    from tests.data.speech_like import write_example

    write_example(pytester.path / "speech")
    (pytester.path / "examples").mkdir()
    (pytester.path / "examples" / "vad.toml").write_text(VAD.read_text())
    pytester.makepyfile(test_vad_ab_example=AB_EXAMPLE.read_text())
    result = _run(pytester)
    outcomes = result.parseoutcomes()
    # 8 pairs give the gate a verdict; an A/A job is almost always inconclusive or passes (a warning or
    # none); a false regression (at most 2.5 %) still shows the example ran to a verdict
    assert outcomes.get("passed") == 1 or "streambench ab: latency regression" in result.stdout.str()
    assert "needs sample_rate_hz" not in result.stdout.str()


def test_the_readme_shows_the_audio_ab_example() -> None:
    code = AB_EXAMPLE.read_text().split('"""', 2)[2].strip()
    assert f"```python\n{code}\n```" in (ROOT / "README.md").read_text()
    assert f"```python\n{code}\n```" in (ROOT / "docs" / "ci.md").read_text()
