"""Building what a run measures: the adapter with its data-bound options, and the environment record
of protocols whose result is not a RunResult."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streambench.adapters.contract import Adapter, AdapterInfo, Stream
from streambench.adapters.registry import create_adapter
from streambench.harness.datasets.catalog import check_sample_streams
from streambench.harness.execution.config import RunConfig
from streambench.harness.instruments.data_hash import hash_streams
from streambench.harness.instruments.manifest import EnvironmentManifest, collect_manifest, fingerprint

__all__ = ["build_adapter", "check_built", "create_bound", "data_bound_of", "environment_for"]


def environment_for(
    config: RunConfig, streams: Sequence[Stream], adapter_module: str
) -> tuple[EnvironmentManifest, str]:
    """The environment lock manifest of a run (seed 004 §6.2.2) and its timing fingerprint, for the
    protocols whose results are not a RunResult (robustness, causality, ...)."""
    seeds = {"dataset": getattr(config.data, "seed", None), "torch": config.torch_seed}
    manifest = collect_manifest(
        seeds,
        hash_streams(streams),
        adapter_module,
        adapter_options=config.adapter_options,
        requested_threads=config.threads,
    )
    return manifest, fingerprint(manifest)


def data_bound_of(sample: Stream) -> dict[str, Any]:
    """The adapter options the data set fixes (DESIGN.md "The data contract"): its class names and the
    payload size of each modality, read from the sample stream's first frame."""
    first = next(iter(sample.frames()))
    input_dims = {m: int(getattr(v, "size", 0)) for m, v in first.inputs.items() if v is not None}
    return {"classes": list(sample.classes), "input_dims": input_dims}


def create_bound(config: RunConfig, data_bound: dict[str, Any]) -> Adapter:
    """The adapter of ``config`` with its data-bound options (:func:`data_bound_of`) filled in."""
    bound = {"classes": tuple(data_bound["classes"]), "input_dims": dict(data_bound["input_dims"])}
    return create_adapter(config.adapter, config.adapter_options, data_bound=bound)


def check_built(config: RunConfig, info: AdapterInfo, sample: Stream) -> None:
    """The adapter's declared classes and framing must fit the data set: a clear error otherwise."""
    declared = tuple(info.classes)
    if declared != tuple(sample.classes):
        raise ValueError(
            f"adapter {config.adapter!r} declares classes {list(declared)[:6]}..., the data set has "
            f"{list(sample.classes)[:6]}... ({len(declared)} vs {len(sample.classes)} classes); "
            "they must match in name and order"
        )
    check_sample_streams(info, [sample])


def build_adapter(config: RunConfig, sample: Stream) -> Adapter:
    """The adapter, with its data-bound options filled from the data set, checked against it."""
    adapter = create_bound(config, data_bound_of(sample))
    check_built(config, adapter.info, sample)
    return adapter
