"""The result files' format (harness/results/files.py): every protocol's result model declares the JSON
field names and schema version its files have held since 0.2, so a file written before the result models
shared their identity fields (:class:`~streambench.harness.results.files.RunRecord`) reads as it did; a
renamed or dropped field, or a new schema version, fails here first (a release note, not an accident)."""

from __future__ import annotations

import pytest

from streambench.harness.results.files import RunRecord
from streambench.harness.runs import registry

FORMATS: dict[str, tuple[int, set[str]]] = {
    "result.json": (
        3,
        {
            "adapter",
            "adapter_info",
            "adapter_options",
            "arrays_file",
            "clock",
            "created_at",
            "dataset",
            "dataset_config",
            "engine",
            "environment",
            "execution",
            "failures",
            "fingerprint",
            "host_timing",
            "incomplete_reason",
            "measurement_quality",
            "metrics",
            "normalisation",
            "protocol",
            "protocol_config",
            "resources",
            "run_id",
            "schema_version",
            "scored",
            "seeds",
            "session_audit",
            "status",
            "streambench_version",
            "streams",
            "threads",
            "warmup",
        },
    ),
    "robustness.json": (
        1,
        {
            "adapter",
            "config",
            "created_at",
            "dataset_seed_kind",
            "environment",
            "execution_mode",
            "fingerprint",
            "report",
            "run",
            "run_id",
            "sandbox",
            "schema_version",
        },
    ),
    "causality.json": (
        1,
        {
            "adapter",
            "config",
            "created_at",
            "cut_seed",
            "cuts",
            "dataset_seed_kind",
            "environment",
            "execution_mode",
            "fingerprint",
            "occlusion_runs",
            "report",
            "run",
            "run_id",
            "sandbox",
            "schema_version",
            "sealed",
            "skipped",
            "streams",
            "tolerance",
        },
    ),
    "detection.json": (
        1,
        {
            "adapter",
            "config",
            "created_at",
            "dataset_seed_kind",
            "environment",
            "execution_mode",
            "fingerprint",
            "latency",
            "report",
            "run",
            "run_id",
            "sandbox",
            "schema_version",
            "score_file",
            "warmup_frames",
        },
    ),
    "stability.json": (
        1,
        {
            "adapter",
            "adapter_name",
            "config",
            "created_at",
            "dataset_seed_kind",
            "environment",
            "events",
            "execution_mode",
            "fingerprint",
            "report",
            "run",
            "run_id",
            "sandbox",
            "schema_version",
        },
    ),
    "hysteresis.json": (
        1,
        {
            "adapter",
            "adapter_info",
            "config",
            "created_at",
            "dataset_seed_kind",
            "environment",
            "execution_mode",
            "fingerprint",
            "report",
            "run",
            "run_id",
            "sandbox",
            "schema_version",
        },
    ),
    "capacity.json": (
        2,
        {
            "adapter",
            "adapter_info",
            "config",
            "cores",
            "created_at",
            "dataset_seed_kind",
            "environment",
            "execution_mode",
            "fingerprint",
            "leftover_processes",
            "run",
            "run_id",
            "sandbox",
            "schema_version",
            "score",
        },
    ),
}
"""Per result file: its schema version and field names, as 0.2 wrote them."""


@pytest.mark.parametrize("protocol", registry.BUILT_IN)
def test_each_result_file_keeps_its_fields_and_schema_version(protocol: str) -> None:
    chosen = registry.get(protocol)
    version, fields = FORMATS[chosen.result_file]
    model = chosen.result_model
    assert issubclass(model, RunRecord)  # run_id, created_at and adapter declared once
    assert set(model.model_fields) == fields
    assert model.model_fields["schema_version"].default == version
    aliases = [name for name, field in model.model_fields.items() if field.alias not in (None, name)]
    assert aliases == []  # the JSON names are the field names
