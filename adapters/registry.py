"""Short adapter names mapped lazily to ``module:Class`` (the lm-evaluation-harness convention).

Nothing is imported until an adapter is asked for, so listing the registry is cheap and a broken
optional adapter does not break the others. Any importable ``module:Class`` is accepted as well.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from adapters.contract import Adapter, AdapterOptions

__all__ = ["REGISTRY", "AdapterLoadError", "create_adapter", "resolve"]

REGISTRY: dict[str, str] = {
    "reference": "adapters.reference:CausalReferenceAdapter",
    "reference-lookahead": "adapters.reference:LookaheadReferenceAdapter",
    # router hysteresis (seed 001): a soft router with a leaky state, and its wrappers
    "reference-router": "adapters.router:SoftRouterAdapter",
    "reference-router-aggregated": "adapters.router:ReferenceAggregatedRouter",
    "reference-router-hard": "adapters.router:ReferenceHardLabelRouter",
    "null": "adapters.null:NullAdapter",
    "busywait": "adapters.null:BusyWaitAdapter",
    "work": "adapters.null:WorkAdapter",
    "cuda-sleep": "adapters.null:CudaSleepAdapter",
    # planted offenders: test fixtures for the causality protocol, each caught by one check
    "offender-peeking": "adapters.offenders:PeekingAdapter",
    "offender-offbyone-mask": "adapters.offenders:OffByOneMaskAdapter",
    "offender-leaky-reset": "adapters.offenders:LeakyResetAdapter",
    "offender-caching": "adapters.offenders:CachingAdapter",
    "faulty": "adapters.faulty:FaultyAdapter",  # planted faults (raise, NaN, shape, hang, exit, segv, leak)
    # generic wrappers (options name the model) and a real third-party streaming model
    "torch-module": "adapters.torch_module:TorchModuleAdapter",
    "torchscript": "adapters.torchscript:TorchScriptAdapter",
    "onnx": "adapters.onnx_runtime:OnnxAdapter",  # extra: streambench[onnx]
    "silero-vad": "adapters.silero:SileroVadJit",  # extra: streambench[vad]
    "silero-vad-onnx": "adapters.silero:SileroVadOnnx",  # extra: streambench[vad]
    # seed 000: TopK sparse encoder, `--option variant=timestep|window` (stability protocol)
    "topk-encoder": "adapters.topk_encoder:TopKEncoderAdapter",
    "reference-detector": "adapters.spoof_detector:SpoofDetectorAdapter",  # detection protocol (seed 002)
}
"""Registered adapters: short name -> ``module:Class``. The ``offender-*`` entries are the planted
offenders of :mod:`adapters.offenders` (test fixtures, not models), registered so the README's
demonstration can name them."""

DATA_BOUND_OPTIONS = ("classes", "input_dims")


class AdapterLoadError(LookupError):
    """An adapter name or its options could not be turned into an adapter."""


def resolve(name: str) -> type:
    """Return the adapter class for a registry name or a ``module:Class`` path."""
    target = REGISTRY.get(name, name)
    if ":" not in target:
        hint = difflib.get_close_matches(name, list(REGISTRY), n=3, cutoff=0.5)
        suggestion = f" Did you mean {' or '.join(repr(h) for h in hint)}?" if hint else ""
        raise AdapterLoadError(
            f"unknown adapter {name!r}.{suggestion} Known adapters: {', '.join(sorted(REGISTRY))}; "
            "or give an importable 'module:Class'."
        )
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AdapterLoadError(f"adapter {name!r}: cannot import module {module_name!r}: {exc}") from exc
    try:
        cls = getattr(module, class_name)
    except AttributeError:
        hint = difflib.get_close_matches(class_name, dir(module), n=3)
        suggestion = f" Did you mean {' or '.join(repr(h) for h in hint)}?" if hint else ""
        raise AdapterLoadError(
            f"adapter {name!r}: module {module_name!r} has no attribute {class_name!r}.{suggestion}"
        ) from None
    if not isinstance(cls, type):
        raise AdapterLoadError(f"adapter {name!r}: {target!r} is not a class")
    return cls


def create_adapter(
    name: str,
    options: Mapping[str, Any] | None = None,
    data_bound: Mapping[str, Any] | None = None,
) -> Adapter:
    """Build an adapter from its name and user options.

    ``options`` are validated by the adapter's ``Options`` model (errors name the field).
    ``data_bound`` values (``classes``, ``input_dims`` from the data set) fill the options of the
    same name that the adapter declares and the user left unset.
    """
    cls = resolve(name)
    options = dict(options or {})
    options_model: type[AdapterOptions] | None = getattr(cls, "Options", None)
    if options_model is None or not issubclass(options_model, AdapterOptions):
        if options:
            raise AdapterLoadError(f"adapter {name!r} takes no options, got {sorted(options)}")
        instance = cls()
    else:
        for key, value in (data_bound or {}).items():
            if key in DATA_BOUND_OPTIONS and key in options_model.model_fields and key not in options:
                options[key] = value
        try:
            parsed = options_model.model_validate(options)
        except ValidationError as exc:
            raise AdapterLoadError(f"adapter {name!r}: invalid options:\n{exc}") from exc
        instance = cls(parsed)
    if not isinstance(instance, Adapter):
        raise AdapterLoadError(
            f"adapter {name!r}: {type(instance).__name__} lacks the adapter interface "
            "(info, reset_state(), predict(frame))"
        )
    return instance
