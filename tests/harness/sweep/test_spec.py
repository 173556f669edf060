"""Sweep files (issue 10; harness/sweep/spec.py): validation naming the file and field, expansion into
runs with stable ids."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from streambench.harness.sweep.spec import SweepError, SweepFile, expand, load_sweep
from streambench.protocols.robustness import RobustnessConfig
from tests.harness.sweep.sweep_helpers import SMALL_RUN, small_sweep


def _write_toml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- the sweep file -------------------------------------------------------------------------------------


def test_example_sweep_file_expands_to_eight_runs() -> None:
    sweep = load_sweep(Path(__file__).parents[3] / "examples" / "sweep.toml")
    specs = expand(sweep)
    assert [(s.label, s.protocol, s.point) for s in specs] == [
        ("reference", "online", None),
        ("reference", "robustness", "missing=30"),
        ("reference", "robustness", "audio_delay=100"),
        ("reference", "robustness", "jitter=20"),
        ("null", "online", None),
        ("null", "robustness", "missing=30"),
        ("null", "robustness", "audio_delay=100"),
        ("null", "robustness", "jitter=20"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[adapters]]\nadapter = 'null'\n[protocols.online]\nbogus = 1\n", "protocols.online.bogus"),
        ("[[adapters]]\nadapter = 'null'\n", "protocols: Field required"),
        (
            "[run]\nadapter = 'x'\n[[adapters]]\nadapter = 'null'\n[protocols.online]\n",
            "run.adapter is set by",
        ),
        ("[[adapters]]\nadapter = 'null'\n[protocols.online]\n[grid]\nseed = [1]\n", "grid key 'seed'"),
        (
            "[sweep]\nbaseline = 'ref'\n[[adapters]]\nadapter = 'null'\n[protocols.online]\n",
            "sweep.baseline 'ref' is not one of the adapters ['null']",
        ),
        ("[[adapters]]\nadapter = 'null'\n[[adapters]]\nadapter = 'null'\n[protocols.online]\n", "repeat"),
        ("[[adapters]]\nadapter = 'null'\n[protocols.online]\n[sweep.resources]\ncpus = 0.5\n", "cpus"),
        ("[[adapters]\n", "not valid TOML"),
    ],
)
def test_a_bad_sweep_file_is_refused_naming_the_file_and_field(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = _write_toml(tmp_path / "bad.toml", text)
    with pytest.raises(SweepError) as caught:
        load_sweep(path)
    assert str(path) in str(caught.value)
    assert expected in str(caught.value)


def test_a_bad_run_configuration_is_refused_before_anything_runs(tmp_path: Path) -> None:
    tree = small_sweep(tmp_path, run={"data": {"kind": "synthetic", "num_streams": 0}})
    with pytest.raises(
        SweepError, match=r"(?s)s\.toml: adapter 'reference', protocol online.*\n  data\.num_streams: "
    ):
        expand(SweepFile.model_validate(tree), "s.toml")


# --- expansion and stable ids ---------------------------------------------------------------------------


def test_expansion_maps_each_perturbation_point_to_a_single_point_robustness_run(tmp_path: Path) -> None:
    specs = expand(SweepFile.model_validate(small_sweep(tmp_path)))
    assert len(specs) == 2 * (1 + 3)
    robust = {
        s.point: RobustnessConfig.model_validate(s.protocol_config)
        for s in specs
        if s.label == "faulty" and s.protocol == "robustness"
    }
    assert robust["missing=30"] is not None and robust["missing=30"].missing_rates_pct == (30.0,)
    assert robust["missing=30"].audio_delays_ms == () and robust["missing=30"].jitters_ms == ()
    assert robust["audio_delay=100"] is not None and robust["audio_delay=100"].audio_delays_ms == (100.0,)
    assert robust["jitter=20"] is not None and robust["jitter=20"].jitters_ms == (20.0,)
    assert robust["jitter=20"].missing_rates_pct == ()
    online = next(s for s in specs if s.protocol == "online")
    assert online.protocol_config is None and online.run.data.num_streams == 3  # type: ignore[union-attr]


def test_run_ids_are_stable_and_depend_only_on_what_is_measured(tmp_path: Path) -> None:
    tree = small_sweep(tmp_path)
    ids = [s.run_id for s in expand(SweepFile.model_validate(tree))]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"(reference|faulty)-(online|robustness)-[0-9a-f]{12}", i) for i in ids)
    assert ids == [s.run_id for s in expand(SweepFile.model_validate(json.loads(json.dumps(tree))))]
    # the sweep's name, the output directory, the resources and the adapters' order change no id
    other = small_sweep(tmp_path / "elsewhere", adapters=[{"adapter": "faulty"}, {"adapter": "reference"}])
    other["sweep"] = {"name": "other", "output_dir": "x", "resources": {"cpus": 2}}
    assert sorted(s.run_id for s in expand(SweepFile.model_validate(other))) == sorted(ids)
    # a default written out is the same run: ids hash the validated configuration
    explicit = small_sweep(tmp_path, run={**SMALL_RUN, "on_error": "continue"})
    assert [s.run_id for s in expand(SweepFile.model_validate(explicit))] == ids
    # what changes the measurement changes the id
    seeded = small_sweep(tmp_path)
    seeded["sweep"]["seeds"] = [1]
    assert not set(ids) & {s.run_id for s in expand(SweepFile.model_validate(seeded))}


def test_grid_seeds_and_repeats_multiply_and_protocol_keys_stay_in_their_protocol(tmp_path: Path) -> None:
    tree = small_sweep(
        tmp_path,
        grid={"run.data.seed": [0, 1], "robustness.missing_mode": ["zero", "none"]},
    )
    tree["sweep"]["repeats"] = 2
    specs = expand(SweepFile.model_validate(tree))
    # per adapter: online 2 data seeds x 2 repeats; robustness 3 points x 2 x 2 modes x 2 repeats
    assert len(specs) == 2 * (2 * 2 + 3 * 2 * 2 * 2)
    assert len({s.run_id for s in specs}) == len(specs)
    online = [s for s in specs if s.protocol == "online"]
    assert all("robustness.missing_mode" not in s.grid for s in online)
    modes = {
        s.protocol_config["missing_mode"] for s in specs if s.protocol_config and s.protocol == "robustness"
    }
    assert modes == {"zero", "none"}
    assert {s.run.data.seed for s in online} == {0, 1}  # type: ignore[union-attr]
    assert {s.repeat for s in specs} == {0, 1}


def test_a_misspelt_adapter_or_option_fails_before_anything_runs(tmp_path: Path) -> None:
    bogus = [{"adapter": "reference"}, {"adapter": "null", "options": {"bogus": 1}}]
    tree = small_sweep(tmp_path / "results", adapters=bogus)
    with pytest.raises(SweepError, match=r"adapter 'null': unknown option\(s\) \['bogus'\]"):
        expand(SweepFile.model_validate(tree))
    tree = small_sweep(tmp_path / "results", adapters=[{"adapter": "reference"}, {"adapter": "refrence"}])
    with pytest.raises(SweepError, match="Did you mean 'reference'"):
        expand(SweepFile.model_validate(tree))
