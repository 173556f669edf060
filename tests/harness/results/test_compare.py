"""Comparison and the regression gate (harness/results/compare.py, ``streambench compare``): a slowed copy of
an adapter is caught, an unchanged rerun is not, fingerprints that differ are refused without --force, a
latency effect is called only when the rank test agrees, and bad --fail-on specs are named."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.results.compare import (
    FailOnSpec,
    FailOnSpecError,
    FailRule,
    FingerprintMismatchError,
    compare_runs,
)
from streambench.harness.results.files import RESULT_FILE
from streambench.harness.results.headline import DataRecord, Figure, RunHeadline
from streambench.harness.results.markdown import format_change, format_value
from streambench.harness.runs.catalog import figure_keys
from streambench.harness.runs.session import execute_run


def headline(run: str, fingerprint: str | None = "f" * 16, **values: float | None) -> RunHeadline:
    units = {"p95": "ms", "p50": "ms", "fps": "fps", "f1@100ms": "%", "energy": "J"}
    return RunHeadline(
        run=run,
        run_id=run,
        protocols=["online"],
        adapter="a",
        created_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        fingerprint=fingerprint,
        figures=[
            Figure(
                key=key,
                label=key,
                unit=units[key],  # type: ignore[arg-type]
                better="higher" if key in ("fps", "f1@100ms") else "lower",
                value=value,
                reason=None if value is not None else "no sensor",
            )
            for key, value in values.items()
        ],
    )


def test_fail_on_spec_parses_and_names_bad_items() -> None:
    spec = FailOnSpec.parse("p95:+10%, f1@100ms:-0.01,f1[missing=30]:-5%,check[occlusion]:-1")
    assert spec.rules == (
        FailRule(key="p95", direction=1, floor=0.1, relative=True),
        FailRule(key="f1@100ms", direction=-1, floor=0.01, relative=False),
        FailRule(key="f1[missing=30]", direction=-1, floor=0.05, relative=True),
        FailRule(key="check[occlusion]", direction=-1, floor=1.0, relative=False),
    )
    assert [r.describe() for r in spec.rules[:2]] == ["p95:+10%", "f1@100ms:-0.01"]
    assert FailOnSpec.parse(None).rules == () == FailOnSpec.parse("  ").rules
    bad = {
        "p95:10%": r"item 1 'p95:10%': the floor '10%' must be a signed number",
        "p95": r"item 1 'p95': expected FIGURE:±FLOOR",
        "p95:+10%,latency:+5%": r"item 2 'latency:\+5%': unknown figure 'latency'; the figures are f1@<Δt>ms",
        "p95:+0%": r"item 1 'p95:\+0%': the floor must be greater than 0",
        "p95:+1%,p95:+2%": r"item 2 'p95:\+2%': p95 already has a rule",
        "p95:+ten%": r"the floor '\+ten%' must be a signed number",
    }
    for text, message in bad.items():
        with pytest.raises(FailOnSpecError, match=message):
            FailOnSpec.parse(text, figure_keys())


def test_latency_regression_needs_the_effect_and_the_rank_test() -> None:
    rng = np.random.default_rng(0)
    base_ns = rng.normal(1_000_000, 20_000, 2000).astype(np.int64)
    slower_ns = base_ns + 300_000  # every frame 0.3 ms slower
    spec = FailOnSpec.parse("p95:+10%")
    base, head = headline("base", p95=1.0), headline("head", p95=1.3)
    slow = compare_runs(base, head, spec, base_ns, slower_ns)
    change = slow.changes[0]
    assert slow.regressions == ["p95"] and change.regression and change.breached
    assert change.change == pytest.approx(0.3) and change.relative == pytest.approx(0.3)
    assert change.rank_test is not None and change.rank_test.alternative == "greater"
    assert change.rank_test.p_value < 1e-100 and change.rank_test.n_head == 2000
    assert change.verdict.startswith("REGRESSION: breaches p95:+10%; rank test agrees")

    # the tail moved by a few outliers, the bulk did not: the effect is over the floor, the ranks disagree
    few_ns, outliers = base_ns[:500], base_ns[:500].copy()
    outliers[:30] += 5_000_000  # 6 % of the frames: the p95 lands among them
    p95 = [float(np.percentile(x, 95)) / 1e6 for x in (few_ns, outliers)]
    assert p95[1] > 5 * p95[0]
    tail = compare_runs(headline("base", p95=p95[0]), headline("head", p95=p95[1]), spec, few_ns, outliers)
    tail = tail.changes[0]
    assert tail.breached and not tail.regression
    assert tail.rank_test is not None and tail.rank_test.p_value > 0.01
    assert "rank test disagrees" in tail.verdict and "not a regression" in tail.verdict

    # below the floor: no rank test is needed
    small = compare_runs(base, headline("head", p95=1.05), spec, base_ns, slower_ns).changes[0]
    assert not small.breached and small.rank_test is None and small.verdict == "within p95:+10%"

    # no samples: an effect alone is not called
    blind = compare_runs(base, head, spec).changes[0]
    assert blind.breached and not blind.regression and "no per-frame samples" in blind.verdict
    # a latency rule between two separate runs always says what it cannot see, and where the gate is
    assert slow.latency_note is not None and "streambench ab" in slow.latency_note


def test_only_a_latency_rule_brings_the_note_on_separate_runs() -> None:
    base = headline("base", **{"f1@100ms": 0.80})
    share = compare_runs(base, headline("head", **{"f1@100ms": 0.79}), FailOnSpec.parse("f1@100ms:-1pp"))
    assert share.latency_note is None
    assert compare_runs(base, headline("head", **{"f1@100ms": 0.79})).latency_note is None


def test_a_floor_in_percentage_points_gates_a_share_and_is_refused_on_other_figures() -> None:
    """F1 is shown as a percentage everywhere (issue 17), so its floor may be written as one: ``-1pp`` is
    the fraction 0.01; a share's change prints in pp; pp on a latency is a mistake and says so."""
    (rule,) = FailOnSpec.parse("f1@100ms:-1.5pp", figure_keys()).rules
    assert rule == FailRule(key="f1@100ms", direction=-1, floor=0.015, relative=False, points=True)
    assert rule.describe() == "f1@100ms:-1.5pp"
    base = headline("base", **{"f1@100ms": 0.80})
    spec = FailOnSpec(rules=(rule,))
    breached = compare_runs(base, headline("head", **{"f1@100ms": 0.784}), spec).changes[0]
    held = compare_runs(base, headline("head", **{"f1@100ms": 0.786}), spec).changes[0]
    assert breached.regression and breached.verdict == "REGRESSION: breaches f1@100ms:-1.5pp"
    assert not held.regression and held.verdict == "within f1@100ms:-1.5pp"
    assert format_change(breached) == "-1.60 pp (-2.0 %)"
    assert format_value(0.784, "%") == "78.40 %"
    with pytest.raises(FailOnSpecError, match=r"p95:\+5pp: pp \(percentage points\) is for shares"):
        compare_runs(headline("b", p95=1.0), headline("h", p95=1.2), FailOnSpec.parse("p95:+5pp"))
    with pytest.raises(FailOnSpecError, match="must be a signed number"):
        FailOnSpec.parse("f1@100ms:-1p")


def test_fps_drop_tests_for_slower_frames_and_f1_needs_no_rank_test() -> None:
    rng = np.random.default_rng(1)
    base_ns = rng.normal(1_000_000, 20_000, 500).astype(np.int64)
    spec = FailOnSpec.parse("fps:-10%,f1@100ms:-0.01,energy:+5%")
    base = headline("base", fps=1000.0, **{"f1@100ms": 0.80}, energy=None)
    head = headline("head", fps=800.0, **{"f1@100ms": 0.785}, energy=None)
    result = compare_runs(base, head, spec, base_ns, base_ns + 250_000)
    fps, f1, energy = result.changes
    assert fps.regression and fps.rank_test is not None and fps.rank_test.alternative == "greater"
    assert f1.regression and f1.rank_test is None and f1.change == pytest.approx(-0.015)
    assert not energy.regression and energy.verdict == "not compared: null in base, null in head"
    assert result.regressions == ["fps", "f1@100ms"]
    # a gated figure the head no longer reports fails the gate
    gone = compare_runs(base, headline("head", fps=1000.0, energy=None), FailOnSpec.parse("f1@100ms:-0.01"))
    (lost,) = [c for c in gone.changes if c.key == "f1@100ms"]
    assert lost.regression and lost.verdict == "REGRESSION: gated by f1@100ms:-0.01 but absent in head"
    with pytest.raises(FailOnSpecError, match=r"neither base nor head has the figure 'p99'"):
        compare_runs(base, head, FailOnSpec.parse("p99:+1%"))


def test_fingerprints_that_differ_are_refused_unless_forced() -> None:
    base, head = headline("base", "a" * 16, p95=1.0), headline("head", "b" * 16, p95=1.0)
    with pytest.raises(FingerprintMismatchError, match=r"base has a{16}, head has b{16}.*--force"):
        compare_runs(base, head)
    forced = compare_runs(base, head, force=True)
    assert (
        forced.forced
        and forced.fingerprint_note == f"forced: environment fingerprints differ ({'a' * 16} vs {'b' * 16})"
    )
    unknown = compare_runs(base, headline("head", None, p95=1.0))
    assert unknown.fingerprint_note == "head: no fingerprint"


def busy_run(results: Path, run_id: str, duration_us: float) -> Path:
    config = RunConfig.model_validate(
        {
            "adapter": "busywait",
            "adapter_options": {"duration_us": duration_us},
            "data": {"num_streams": 3, "duration_s": 5.0},
            "engine": {"warmup_frames": 10},
            "output_dir": results,
            "run_id": run_id,
        }
    )
    return execute_run(config)[2]


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A busy-wait adapter, the same adapter rerun, and a slowed copy of it (5x the wait)."""
    results = tmp_path_factory.mktemp("compare") / "results"
    busy_run(results, "base", 500.0)
    busy_run(results, "rerun", 500.0)
    busy_run(results, "slowed", 2500.0)
    return results


GATE = "p50:+50%,f1@100ms:-0.01"
"""The median, not the mean or a tail: another process taking the CPU from the busy-wait stretches a few
frames, which an unchanged rerun on a busy machine must survive; half the frames, it cannot fake."""


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["compare", *args], env={"COLUMNS": "200"})
    return result.exit_code, result.output


@pytest.mark.processes
def test_a_slowed_adapter_is_caught_and_a_rerun_is_not(busy: Path) -> None:
    # --force: these runs are measured on whatever load the test machine has; a run the quality verdict
    # calls INVALID would (rightly) not be called a regression: that is tested on synthetic data below
    code, output = invoke(
        "base", "slowed", "--results-dir", str(busy), "--fail-on", GATE, "--json", "--force"
    )
    assert code == 1, output
    slowed = json.loads(output)
    assert slowed["regressions"] == ["p50"]
    p50 = next(c for c in slowed["changes"] if c["key"] == "p50")
    assert p50["relative"] > 3.0 and p50["rank_test"]["agrees"] and p50["rank_test"]["n_head"] == 3 * 125

    code, output = invoke("base", "rerun", "--results-dir", str(busy), "--fail-on", GATE, "--json")
    assert code == 0, output
    rerun = json.loads(output)
    assert rerun["regressions"] == []
    assert abs(next(c for c in rerun["changes"] if c["key"] == "p50")["relative"]) < 0.5

    code, output = invoke("base", "slowed", "--results-dir", str(busy), "--fail-on", GATE, "--force")
    assert code == 1 and "regression: p50" in output and "REGRESSION: breaches p50:+50%" in output
    code, output = invoke("base", "rerun", "--results-dir", str(busy))  # no rules: changes only, exit 0
    assert code == 0 and "no rule" in output


@pytest.mark.processes
def test_cli_refuses_other_environments_and_bad_input(busy: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(busy / "base", other)
    raw = json.loads((other / RESULT_FILE).read_text())
    raw["fingerprint"] = "0" * 16
    (other / RESULT_FILE).write_text(json.dumps(raw))
    code, output = invoke(str(busy / "base"), str(other), "--fail-on", GATE)
    flat = " ".join(output.split())
    assert code == 2 and "environment fingerprints differ" in flat and "Compare anyway with --force" in flat
    code, output = invoke(str(busy / "base"), str(other), "--fail-on", GATE, "--force", "--json")
    assert code == 0, output
    assert json.loads(output)["fingerprint_note"].startswith("forced: environment fingerprints differ")

    code, output = invoke("base", "slowed", "--results-dir", str(busy), "--fail-on", "p95:10%")
    assert code == 2 and "--fail-on item 1 'p95:10%'" in " ".join(output.split())
    code, output = invoke("base", "slowd", "--results-dir", str(busy))
    assert code == 2 and "did you mean 'slowed'?" in " ".join(output.split())


def test_a_latency_regression_between_invalid_measurements_is_not_called_unless_forced() -> None:
    from streambench.harness.results.quality import judge_quality

    rng = np.random.default_rng(0)
    base_ns = rng.normal(1e6, 1e4, 400).astype(np.int64)
    head_ns = (base_ns * 1.5).astype(np.int64)
    spec = FailOnSpec.parse("p50:+10%,f1@100ms:-0.01")
    valid = judge_quality(base_ns, 4, 0, 1.0)
    invalid = judge_quality(head_ns[:50], 1, 0, 1.0)  # too few frames for its p99
    base = headline("base", p50=1.0, **{"f1@100ms": 0.9}).model_copy(update={"measurement": valid})
    head = headline("head", p50=1.5, **{"f1@100ms": 0.5}).model_copy(update={"measurement": invalid})
    called = compare_runs(base, head.model_copy(update={"measurement": valid}), spec, base_ns, head_ns)
    assert called.regressions == ["p50", "f1@100ms"] and called.refusal is None
    refused = compare_runs(base, head, spec, base_ns, head_ns)
    assert refused.regressions == ["f1@100ms"]  # quality is about timing: accuracy is still judged
    assert refused.refusal is not None and "head: p99 of 50 frames" in refused.refusal
    p50 = next(c for c in refused.changes if c.key == "p50")
    assert not p50.regression and p50.verdict.startswith("not called")
    forced = compare_runs(base, head, spec, base_ns, head_ns, force=True)
    assert forced.regressions == ["p50", "f1@100ms"] and forced.refusal is None


def with_data(head: RunHeadline, digest: str, seed: int | None, kind: str | None) -> RunHeadline:
    data = DataRecord.model_validate({"kind": "synthetic", "hash": digest, "seed": seed, "seed_kind": kind})
    return head.model_copy(update={"data": data})


def test_different_draws_are_compared_with_a_note_and_their_scores_gated_only_when_forced() -> None:
    """Issue 24: two secret seeds are two draws of one distribution. Timings are gated as ever; a score's
    regression is not called (exit 3) unless forced, since the draw moves it too."""
    rng = np.random.default_rng(1)
    base_ns = rng.normal(1e6, 1e4, 400).astype(np.int64)
    head_ns = (base_ns * 1.5).astype(np.int64)
    spec = FailOnSpec.parse("p50:+10%,f1@100ms:-0.01")
    base = with_data(headline("base", p50=1.0, **{"f1@100ms": 0.9}), "a" * 64, 11, "secret")
    head = with_data(headline("head", p50=1.5, **{"f1@100ms": 0.5}), "b" * 64, 22, "secret")
    drawn = compare_runs(base, head, spec, base_ns, head_ns)
    assert drawn.data_note is not None
    assert "different draws of the synthetic set (secret seeds)" in drawn.data_note
    assert drawn.regressions == ["p50"]  # the timing is still called
    f1 = next(c for c in drawn.changes if c.key == "f1@100ms")
    assert not f1.regression and f1.verdict.startswith("not called (REGRESSION: breaches f1@100ms:-0.01)")
    assert drawn.refusal is not None and "one --seed for both runs, or --force" in drawn.refusal
    forced = compare_runs(base, head, spec, base_ns, head_ns, force=True)
    assert forced.regressions == ["p50", "f1@100ms"] and forced.refusal is None
    assert forced.data_note == drawn.data_note  # forced or not, the note stays
    # other data (here: two public seeds) is noted as such; the same data (same hash) is not noted at all
    public = compare_runs(base, with_data(head, "b" * 64, 22, "public"), spec, base_ns, head_ns)
    assert public.data_note is not None and public.data_note.startswith("different data: base scored")
    assert public.regressions == ["p50"]
    same = compare_runs(base, with_data(head, "a" * 64, 11, "secret"), spec, base_ns, head_ns)
    assert same.data_note is None and same.regressions == ["p50", "f1@100ms"] and same.refusal is None
    unknown = compare_runs(base, headline("head", p50=1.5, **{"f1@100ms": 0.5}), spec, base_ns, head_ns)
    assert unknown.data_note is None and unknown.regressions == ["p50", "f1@100ms"]  # an old index entry
    # an INVALID measurement and different draws: both refusals, each on its own figures
    from streambench.harness.results.quality import judge_quality

    invalid = judge_quality(head_ns[:50], 1, 0, 1.0)
    both = compare_runs(base, head.model_copy(update={"measurement": invalid}), spec, base_ns, head_ns)
    assert both.regressions == [] and both.refusal is not None
    assert "measurement INVALID" in both.refusal and "different draws" in both.refusal


def test_a_sealed_run_and_an_in_process_one_do_not_compare_without_force() -> None:
    """Issue 24 item 1: an in-process model shares the harness's clock, data and labels; its figures are
    never set beside a sealed run's in a comparison or a gate unless forced, and then it says so."""
    base = headline("base", p95=1.0).model_copy(update={"execution": "sealed"})
    head = headline("head", p95=1.0).model_copy(update={"execution": "in-process"})
    with pytest.raises(FingerprintMismatchError, match="ran its adapter sealed, head in-process"):
        compare_runs(base, head)
    forced = compare_runs(base, head, force=True)
    assert forced.fingerprint_note == "forced: the adapters ran sealed and in-process"
    same = compare_runs(base, head.model_copy(update={"execution": "sealed"}))
    assert same.fingerprint_note is None
    older = compare_runs(base, head.model_copy(update={"execution": None}))  # an index entry before it
    assert older.fingerprint_note is None


def test_compare_each_gates_every_pair_and_the_exit_code_covers_them_all() -> None:
    """Issue 27: ``compare`` takes N runs, the first the base; the gate applies to every pair base→other,
    and the command's exit code is the worst of them (1 a regression, else 3 not called, else 0)."""
    from streambench.harness.results.compare import compare_each, exit_code
    from streambench.harness.results.quality import judge_quality

    spec = FailOnSpec.parse("f1@100ms:-1pp")
    base = headline("base", **{"f1@100ms": 0.90})
    same, worse = headline("same", **{"f1@100ms": 0.90}), headline("worse", **{"f1@100ms": 0.80})
    pairs = compare_each(base, [same, worse], spec)
    assert [c.head.run for c in pairs] == ["same", "worse"] and all(c.base.run == "base" for c in pairs)
    assert [c.regressions for c in pairs] == [[], ["f1@100ms"]] and exit_code(pairs) == 1
    assert exit_code(compare_each(base, [same, same], spec)) == 0
    drawn = with_data(worse, "b" * 64, 2, "secret")  # different draws: the score's regression is not called
    assert exit_code(compare_each(with_data(base, "a" * 64, 1, "secret"), [same, drawn], spec)) == 3
    # two runs: the same comparison as compare_runs
    assert compare_each(base, [worse], spec)[0] == compare_runs(base, worse, spec)
    with pytest.raises(ValueError, match="2 heads but 1 latency samples"):
        compare_each(base, [same, worse], spec, None, [None])
    # an INVALID run's timing changes are flagged as not measurements, forced or not, rules or not
    invalid = judge_quality(np.full(50, 1_000_000), 1, 0, 1.0)
    busy = headline("busy", p95=2.0).model_copy(update={"measurement": invalid})
    flagged = compare_runs(headline("base", p95=1.0), busy, force=True)
    assert flagged.invalid_timing == "busy: measurement INVALID: p99 of 50 frames is not a percentile"
    assert compare_runs(headline("base", p95=1.0), headline("head", p95=2.0)).invalid_timing is None


def test_cli_compares_the_base_with_each_other_run(busy: Path) -> None:
    """``compare BASE HEAD HEAD``: each pair printed and gated; two runs keep their output (one JSON
    object, no summary)."""
    args = ["base", "rerun", "slowed", "--results-dir", str(busy), "--fail-on", GATE, "--force"]
    code, output = invoke(*args, "--json")
    assert code == 1, output
    pairs = json.loads(output)
    assert [(p["base"]["run"], p["head"]["run"]) for p in pairs] == [("base", "rerun"), ("base", "slowed")]
    assert pairs[0]["regressions"] == [] and pairs[1]["regressions"] == ["p50"]
    code, output = invoke(*args)
    assert code == 1 and output.count("base → ") == 2
    # each run named by its model first, its id second (issue 37)
    assert "busywait base against 2 runs:" in output and "→ busywait slowed: regression: p50" in output
    assert "→ busywait rerun: no regression" in output
    code, output = invoke("base", "rerun", "rerun", "--results-dir", str(busy), "--fail-on", GATE, "--force")
    assert code == 0, output
    code, output = invoke("base", "rerun", "--results-dir", str(busy), "--json")
    assert code == 0 and isinstance(json.loads(output), dict) and "against" not in output
    code, output = invoke("base", "rerun", "nope", "--results-dir", str(busy))
    assert code == 2 and "run 'nope'" in " ".join(output.split())
