"""The causality run (harness/runs/causality/): the reference model passes every check, and each planted
offender (adapters/offenders/) fails exactly the check meant for it; the result file is written."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from streambench.adapters.faulty import stream_fingerprint
from streambench.harness.datasets.catalog import make_streams
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.sealing import seal_frames
from streambench.harness.results.summary import print_causality
from streambench.harness.runs.causality.protocol import RESULT_FILE, CausalityResult, execute_causality
from streambench.protocols.causality import CausalityConfig, CausalityReport, plan_occlusion

SEQUENCE_CHECKS = {"gradient_flow", "stream_sequence", "sequence_perturbation"}
ALWAYS = {
    "determinism",
    "shared_state",
    "occlusion",
    "state_leak",
    "reset_idempotent",
    "caching",
    "timed_untimed",
}


def small(tmp_path: Path, adapter: str, **options: Any) -> RunConfig:
    return RunConfig.model_validate(
        {
            "adapter": adapter,
            "adapter_options": options,
            "data": {"num_streams": 3, "duration_s": 5.0, "seed": 0},
            "engine": {"warmup_frames": 20},
            "output_dir": tmp_path,
            "run_id": "x",
        }
    )


def run(tmp_path: Path, adapter: str, sealed: bool = True, **options: Any) -> CausalityResult:
    result, run_dir = execute_causality(small(tmp_path, adapter, **options), CausalityConfig(sealed=sealed))
    assert run_dir == tmp_path / "x"
    return result


def names(report: CausalityReport) -> set[str]:
    return {c.name for c in report.checks}


@pytest.mark.processes
def test_reference_passes_every_check(tmp_path: Path) -> None:
    calls: list[tuple[int, int, str]] = []
    config = small(tmp_path, "reference")
    result, run_dir = execute_causality(config, CausalityConfig(), lambda *a: calls.append(a))
    assert result.report.passed, result.report.failed
    assert names(result.report) == ALWAYS and result.sealed
    audit = next(c for c in result.report.checks if c.name == "timed_untimed")
    assert "3 streams timed vs untimed: every prediction identical" in audit.detail
    f1 = re.findall(r"F1@0ms ([0-9.]+) % timed, ([0-9.]+) % untimed", audit.detail)
    assert f1 and f1[0][0] == f1[0][1] and 0 < float(f1[0][0]) <= 100
    assert set(result.skipped) == SEQUENCE_CHECKS  # no sequence mode: skipped, not claimed as passed
    assert len(result.occlusion_runs) == 3 * 3 * 3 and all(r.passed for r in result.occlusion_runs)
    assert result.streams == ["syn-0000", "syn-0001", "syn-0002"]
    assert calls and calls[-1][0] == calls[-1][1] == len(calls)
    # the file is written and reads back
    path = run_dir / RESULT_FILE
    assert path.is_file()
    loaded = CausalityResult.model_validate_json(path.read_text())
    assert loaded.report == result.report and loaded.run_id == "x"
    assert json.loads(path.read_text())["adapter"] == "reference"


@pytest.mark.processes
def test_peeking_fails_occlusion_only_at_the_cut_in_process_and_cannot_peek_when_sealed(
    tmp_path: Path,
) -> None:
    sealed = run(tmp_path / "sealed", "offender-peeking")
    assert sealed.report.passed, sealed.report.failed  # its back door is in this process, not the worker's
    result = run(tmp_path, "offender-peeking", sealed=False)
    assert result.report.failed == ("occlusion",)
    check = next(c for c in result.report.checks if c.name == "occlusion")
    # the cuts were drawn at random from a seed the result records, and are the ones the seed gives
    assert result.cut_seed is not None and result.config.cut_seed == result.cut_seed
    assert result.cuts == {
        s: plan_occlusion(125, result.config, result.cut_seed, k) for k, s in enumerate(result.streams)
    }
    first_cut = result.cuts["syn-0000"][0]
    assert check.first_stream == "syn-0000" and check.first_frame == first_cut
    assert 0 < check.max_difference < math.inf
    # every occluded variant is caught at its own cut
    assert not any(r.passed for r in result.occlusion_runs)
    assert [r.first_frame for r in result.occlusion_runs] == [
        c for s in result.streams for c in result.cuts[s] for _ in range(3)
    ]
    # the back door is closed after the run
    from streambench.adapters.offenders import PeekingAdapter

    assert PeekingAdapter._leaked == {}


@pytest.mark.processes
def test_leaky_reset_fails_state_leak_only(tmp_path: Path) -> None:
    result = run(tmp_path, "offender-leaky-reset", sealed=False)
    assert result.report.failed == ("state_leak",)
    check = next(c for c in result.report.checks if c.name == "state_leak")
    assert check.first_stream == "syn-0000" and check.first_frame == 0


@pytest.mark.processes
def test_caching_adapter_fails_caching_only(tmp_path: Path) -> None:
    result = run(tmp_path, "offender-caching", sealed=False, miss_cost_ms=0.5)
    assert result.report.failed == ("caching",)
    check = next(c for c in result.report.checks if c.name == "caching")
    assert check.first_stream == "syn-0000" and check.max_difference > 2.0
    assert "repeat vs unseen control" in check.detail
    # an exact key misses the one-ulp copies too: they would have caught it alone
    assert "vs one-ulp copies" in check.detail and "tolerant" not in check.detail


@pytest.mark.processes
def test_a_cache_that_rounds_its_key_fails_caching_only_in_a_sealed_worker(tmp_path: Path) -> None:
    """Issue 24, item 4: a cache keyed on the payload rounded to 3 decimals serves a one-ulp copy of the
    stream as fast as the repeat (the former control passed it); the unseen control is a miss, and the
    audit catches it. Its detail says the one-ulp copies alone would have passed it."""
    result = run(tmp_path, "offender-rounding-cache", miss_cost_ms=0.5)
    assert result.report.failed == ("caching",), result.report.failed
    check = next(c for c in result.report.checks if c.name == "caching")
    assert check.first_stream == "syn-0000" and check.max_difference > 2.0, check.detail
    assert "a cache tolerant to small input changes" in check.detail, check.detail
    former = re.search(
        r"one-ulp copies \(the former control, not judged\): median speed-up ([0-9.]+)x", check.detail
    )
    assert former and float(former[1]) < 2.0, check.detail  # the one-ulp copies are hits as well


@pytest.mark.processes
@pytest.mark.parametrize("offset", [0, 1])
def test_offbyone_mask_fails_gradient_flow_and_sequence_only(tmp_path: Path, offset: int) -> None:
    result = run(tmp_path, "offender-offbyone-mask", sealed=False, mask_offset=offset)
    assert not set(result.skipped) & SEQUENCE_CHECKS
    assert names(result.report) >= SEQUENCE_CHECKS
    if offset == 0:  # the correctly masked control
        assert result.report.passed, result.report.failed
        return
    assert set(result.report.failed) == SEQUENCE_CHECKS
    perturbation = next(c for c in result.report.checks if c.name == "sequence_perturbation")
    assert perturbation.first_stream == "syn-0000" and perturbation.first_frame is not None
    gradient = next(c for c in result.report.checks if c.name == "gradient_flow")
    assert (gradient.first_frame, gradient.first_source) == (0, 1)
    assert gradient.first_stream == "syn-0000"
    sequence = next(c for c in result.report.checks if c.name == "stream_sequence")
    assert sequence.first_frame == 0


@pytest.mark.processes
def test_print_causality(tmp_path: Path) -> None:
    result = run(tmp_path, "offender-leaky-reset", sealed=False)
    buffer = io.StringIO()
    print_causality(Console(file=buffer, width=200), result.report, result.skipped)
    text = buffer.getvalue()
    assert "state_leak" in text and "FAILED" in text and "skipped" in text and "syn-0000" in text


@pytest.mark.slow
def test_cli_causality_exit_code_follows_the_verdict(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from streambench.harness.cli import app

    args = ["run", "--protocol", "causality", "--streams", "3", "--duration", "5", "--warmup-frames", "20"]
    args += ["--output-dir", str(tmp_path), "--no-progress"]
    clean = CliRunner().invoke(app, [*args, "--run-id", "ref"])
    assert clean.exit_code == 0, clean.output
    cheat = CliRunner().invoke(app, [*args, "--run-id", "leak", "--adapter", "offender-leaky-reset"])
    assert cheat.exit_code == 1 and (tmp_path / "leak" / "causality.json").exists()


@pytest.mark.processes
def test_protocol_config_sets_cuts_seed_tolerance_and_streams(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from streambench.harness.cli import app

    settings = tmp_path / "causality.toml"
    settings.write_text(
        "num_cuts = 2\ncut_seed = 11\nstreams = 2\ntolerance = 1e-6\noccluders = ['zeros']\nsealed = false\n"
    )
    args = ["run", "--protocol", "causality", "--streams", "3", "--duration", "5", "--warmup-frames", "20"]
    args += ["--output-dir", str(tmp_path), "--no-progress", "--protocol-config", str(settings)]
    done = CliRunner().invoke(app, [*args, "--run-id", "cfg"])
    assert done.exit_code == 0, done.output
    result = CausalityResult.model_validate_json((tmp_path / "cfg" / RESULT_FILE).read_text())
    assert (
        result.cut_seed == 11
        and result.config.tolerance == 1e-6
        and result.streams == ["syn-0000", "syn-0001"]
    )
    assert result.cuts == {s: plan_occlusion(125, result.config, 11, k) for k, s in enumerate(result.streams)}
    assert all(len(c) == 2 for c in result.cuts.values()) and len(result.occlusion_runs) == 2 * 2 * 1
    bad = tmp_path / "bad.toml"
    bad.write_text("num_cut = 2\n")
    refused = CliRunner().invoke(app, [*args[:-1], str(bad), "--run-id", "bad"])
    assert refused.exit_code == 2 and "num_cut" in refused.output


@pytest.mark.processes
def test_an_adapter_error_in_one_check_is_that_checks_failure(tmp_path: Path) -> None:
    """The faulty adapter raises on the second stream only: the checks that run it fail with the stream and
    frame named, the checks on stream A alone still run and pass, and causality.json is written."""
    second = make_streams(small(tmp_path, "reference").data)[1]
    fingerprint = stream_fingerprint(seal_frames(second.frames())[0])
    result, run_dir = execute_causality(
        small(tmp_path, "faulty", fault="raise", stream_fingerprint=fingerprint, at_frame=3),
        CausalityConfig(cut_seed=0),
    )
    assert (run_dir / RESULT_FILE).is_file() and not result.report.passed
    by_name = {c.name: c for c in result.report.checks}
    for name in ("occlusion", "state_leak", "reset_idempotent", "timed_untimed"):
        check = by_name[name]
        assert not check.passed and (check.first_stream, check.first_frame) == ("syn-0001", 3), name
        assert "the adapter failed during this check: AdapterCallError" in check.detail
    assert by_name["caching"].passed  # stream A only: unaffected, still judged


@pytest.mark.processes
def test_a_nondeterministic_model_is_named_nondeterministic_not_a_cheat(tmp_path: Path) -> None:
    """A model whose answers change from run to run (unseeded noise): the determinism pre-check names it
    with the size of the noise, and the later checks compare within that, so no other offence is
    claimed (before the pre-check, it failed the timed/untimed audit and occlusion)."""
    result = run(tmp_path, "tests.support:UnseededNoiseAdapter", sealed=False)
    assert result.report.failed == ("determinism",)
    check = next(c for c in result.report.checks if c.name == "determinism")
    assert (check.first_stream, check.first_frame) == ("syn-0000", 0)
    assert "nondeterministic" in check.detail and 0 < check.max_difference < 1
    assert result.tolerance == 2 * check.max_difference


@pytest.mark.processes
def test_a_module_global_leak_is_named_shared_state_not_look_ahead(tmp_path: Path) -> None:
    """State shared across instances (a class-level running mean): two fresh processes agree, a fresh
    instance in a process that already ran differs: shared_state fails, and the comparisons it would
    confound are skipped with the reason instead of failing as occlusion or a state leak."""
    result = run(tmp_path, "offender-global-leak")
    assert result.report.failed == ("shared_state",)
    assert {"occlusion", "state_leak", "timed_untimed"} <= set(result.skipped)
    assert "confounds" in result.skipped["occlusion"]
    in_process = run(tmp_path / "in-process", "offender-global-leak", sealed=False)
    assert "determinism" in in_process.report.failed  # in one process: it cannot tell which
    det = next(c for c in in_process.report.checks if c.name == "determinism")
    assert "share state" in det.detail and "shared_state" in in_process.skipped


@pytest.mark.processes
def test_a_model_that_finds_the_engines_frame_list_is_caught_in_process_and_disarmed_when_sealed(
    tmp_path: Path,
) -> None:
    """(The garbage-collector variant of this cheat is tested in
    tests/harness/execution/test_sealed_worker.py: searching the heap at every stream of a causality run
    takes minutes.)"""
    via = "stack"
    sealed = run(tmp_path / "sealed", "offender-stack-peeking", via=via)
    assert sealed.report.passed, sealed.report.failed  # nothing to find in the worker
    result = run(tmp_path, "offender-stack-peeking", sealed=False, via=via)
    assert result.report.failed == ("occlusion",)


@pytest.mark.processes
def test_state_leak_checks_every_stream_in_both_orders(tmp_path: Path) -> None:
    result = run(tmp_path, "reference")
    leak = next(c for c in result.report.checks if c.name == "state_leak")
    assert leak.passed
    assert leak.detail.startswith("syn-0000, syn-0001, syn-0002 vs the reverse order: every stream agrees")


def test_the_offender_demonstrations_name_registered_offenders_and_their_checks() -> None:
    """docs/trust.md's "Planted offenders" lines name registered adapters and the check each one fails (the
    tests above show each failing exactly that check); the README shows some of them, with the same words."""
    from streambench.adapters.registry import REGISTRY, resolve

    root = Path(__file__).resolve().parents[4]
    pattern = r"--protocol causality --adapter (offender-[a-z-]+)\s+# (.*)"
    demos = dict(re.findall(pattern, (root / "docs" / "trust.md").read_text()))
    shown = dict(re.findall(pattern, (root / "README.md").read_text()))
    assert shown and shown.items() <= demos.items()
    expected = {
        "offender-peeking": "occlusion",
        "offender-offbyone-mask": "gradient_flow",
        "offender-leaky-reset": "state_leak",
        "offender-caching": "caching",
        "offender-rounding-cache": "caching",
        "offender-global-leak": "shared_state",
    }
    assert set(demos) == set(expected)
    for name, check in expected.items():
        assert name in REGISTRY
        assert resolve(name).__module__ in (
            "streambench.adapters.offenders",
            "streambench.adapters.offenders.rounding_cache",
            "streambench.adapters.sneaky",
        )
        assert check in demos[name]


@pytest.mark.processes
def test_an_existing_result_file_is_never_overwritten(tmp_path: Path) -> None:
    config = small(tmp_path, "reference")
    checks = CausalityConfig(cuts=(0.5,), occluders=("zeros",))
    execute_causality(config, checks)
    before = (tmp_path / "x" / RESULT_FILE).read_bytes()
    with pytest.raises(ValueError, match=r"causality\.json: exists already; give the run another --run-id"):
        execute_causality(config, checks)
    assert (tmp_path / "x" / RESULT_FILE).read_bytes() == before


@pytest.mark.processes
def test_a_model_that_never_reads_past_a_predictable_cut_is_caught_by_random_cuts(tmp_path: Path) -> None:
    """It reads frame t + 1 everywhere except at the frames fixed cut fractions would cut at: fixed cuts
    are fooled (the weakness random cuts remove), random cuts drawn from a recorded seed are not."""
    spare = (0.25, 0.5, 0.75)
    config = small(tmp_path, "offender-stack-peeking", spare_fractions=list(spare))
    fixed = CausalityConfig(cuts=spare, sealed=False, occluders=("zeros",))
    fooled, _ = execute_causality(config, fixed)
    assert fooled.report.passed, fooled.report.failed
    drawn = CausalityConfig(cut_seed=9, sealed=False, occluders=("zeros",))
    caught, _ = execute_causality(config.model_copy(update={"run_id": "y"}), drawn)
    assert "occlusion" in caught.report.failed
