"""Building what a run measures: the adapter with its data-bound options, and the environment record
of protocols whose result is not a RunResult."""

from __future__ import annotations

from collections.abc import Sequence

from adapters.contract import Adapter, Stream
from adapters.registry import create_adapter
from harness.datasets.catalog import check_sample_streams
from harness.execution.config import RunConfig
from harness.instruments.data_hash import hash_streams
from harness.instruments.manifest import EnvironmentManifest, collect_manifest, fingerprint

__all__ = ["build_adapter", "environment_for"]


def environment_for(
    config: RunConfig, streams: Sequence[Stream], adapter_module: str
) -> tuple[EnvironmentManifest, str]:
    """The environment lock manifest of a run (seed 004 §6.2.2) and its timing fingerprint, for the
    protocols whose results are not a RunResult (robustness, causality, ...)."""
    seeds = {"dataset": getattr(config.data, "seed", None), "torch": config.torch_seed}
    manifest = collect_manifest(seeds, hash_streams(streams), adapter_module)
    return manifest, fingerprint(manifest)


def build_adapter(config: RunConfig, sample: Stream) -> Adapter:
    """The adapter, with its data-bound options filled from the data set."""
    first = next(iter(sample.frames()))
    input_dims = {m: int(getattr(v, "size", 0)) for m, v in first.inputs.items() if v is not None}
    adapter = create_adapter(
        config.adapter,
        config.adapter_options,
        data_bound={"classes": sample.classes, "input_dims": input_dims},
    )
    declared = tuple(adapter.info.classes)
    if declared != tuple(sample.classes):
        raise ValueError(
            f"adapter {config.adapter!r} declares classes {list(declared)[:6]}..., the data set has "
            f"{list(sample.classes)[:6]}... ({len(declared)} vs {len(sample.classes)} classes); "
            "they must match in name and order"
        )
    check_sample_streams(adapter.info, [sample])
    return adapter
