"""harness/cli/option_fields.py is what harness/cli/generate_options.py generates from the pydantic
models: the command line's defaults and help are the fields', copied without importing pydantic at
start-up. A field whose default, description or choices changed without regenerating the file fails here
(``python -m streambench.harness.cli.generate_options`` fixes it)."""

from __future__ import annotations

import dataclasses

import pytest

from streambench.harness.cli import generate_options, option_fields
from streambench.harness.cli.options import AB_OPTIONS, RUN_OPTIONS, Option
from streambench.harness.datasets.catalog import KINDS
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import EngineConfig
from streambench.harness.execution.rounds import RoundsConfig


def test_the_generated_file_is_what_the_models_generate() -> None:
    assert generate_options.TARGET.read_text() == generate_options.render(), (
        f"{generate_options.TARGET} is out of date: python -m streambench.harness.cli.generate_options"
    )
    assert generate_options.main(["--check"]) == 0


def test_a_changed_default_or_description_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: the models changed under a file generated before."""
    before = generate_options.render()
    field = EngineConfig.model_fields["warmup_frames"]
    monkeypatch.setattr(field, "default", 50)
    assert generate_options.render() != before
    monkeypatch.setattr(field, "default", 100)
    monkeypatch.setattr(RoundsConfig.model_fields["rounds"], "description", "pairs, reworded")
    changed = generate_options.render()
    assert changed != before and "pairs, reworded" in changed


def test_the_file_holds_each_fields_default_and_description() -> None:
    """Against the models read directly: the default of a field an option shows, its help."""
    assert option_fields.DEFAULTS["RunConfig.engine.warmup_frames"] == EngineConfig().warmup_frames
    assert option_fields.DEFAULTS["RoundsConfig.budget_s"] == RoundsConfig().budget_s
    assert option_fields.DEFAULTS["RunConfig.output_dir"] == RunConfig().output_dir
    help_text, choices = option_fields.FIELDS["RunConfig.engine.warmup_frames"]
    assert help_text == EngineConfig.model_fields["warmup_frames"].description and choices == ()
    assert option_fields.FIELDS["RunConfig.on_error"][1] == ("continue", "stop")
    kinds = option_fields.FIELDS["RunConfig.data.kind"][1]  # the tagged union's: every data set kind
    assert sorted(kinds) == sorted(KINDS)


def test_every_option_names_a_field_with_a_description() -> None:
    for option in (*RUN_OPTIONS, *AB_OPTIONS):
        _, text, _ = generate_options.describe(option.field)
        assert text, option.name


@pytest.mark.parametrize(
    ("field", "said"),
    [
        ("RunConfig.engine.warmup_frame", "EngineConfig has no field 'warmup_frame'"),
        ("RunConfg.adapter", "no model 'RunConfg'"),
        ("RunConfig.data.fps", None),  # described: fine
    ],
)
def test_a_field_that_is_not_there_is_named(field: str, said: str | None) -> None:
    option = dataclasses.replace(RUN_OPTIONS[0], field=field)
    if said is None:
        generate_options.render([option])
        return
    with pytest.raises(ValueError, match=said):
        generate_options.render([option])


def test_a_field_without_a_description_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(EngineConfig.model_fields["pacing"], "description", None)
    option = Option("pacing", "RunConfig.engine.pacing", str)
    with pytest.raises(ValueError, match=r"RunConfig.engine.pacing has no description"):
        generate_options.render([option])
