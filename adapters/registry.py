"""Short adapter names mapped lazily to ``module:Class`` (the lm-evaluation-harness convention).

Nothing is imported until an adapter is asked for, so listing the registry is cheap and a broken
optional adapter does not break the others. Any importable ``module:Class`` is accepted as well.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from streambench.adapters.contract import Adapter, AdapterOptions, StreamingAdapter
from streambench.adapters.importing import import_here

__all__ = ["REGISTRY", "AdapterLoadError", "create_adapter", "resolve"]

REGISTRY: dict[str, str] = {
    "reference": "streambench.adapters.reference:CausalReferenceAdapter",
    "reference-lookahead": "streambench.adapters.reference:LookaheadReferenceAdapter",
    "reference-gru": "streambench.adapters.reference_gru:ReferenceGruAdapter",  # the same, as an nn.GRU
    # router hysteresis (seed 001): a soft router with a leaky state, and its wrappers
    "reference-router": "streambench.adapters.router:SoftRouterAdapter",
    "reference-router-aggregated": "streambench.adapters.router:ReferenceAggregatedRouter",
    "reference-router-hard": "streambench.adapters.router:ReferenceHardLabelRouter",
    "null": "streambench.adapters.null:NullAdapter",
    "busywait": "streambench.adapters.null:BusyWaitAdapter",
    "work": "streambench.adapters.null:WorkAdapter",
    "cuda-sleep": "streambench.adapters.null:CudaSleepAdapter",
    # planted offenders: test fixtures for the causality protocol, each caught by one check
    "offender-peeking": "streambench.adapters.offenders:PeekingAdapter",
    "offender-offbyone-mask": "streambench.adapters.offenders:OffByOneMaskAdapter",
    "offender-leaky-reset": "streambench.adapters.offenders:LeakyResetAdapter",
    "offender-caching": "streambench.adapters.offenders:CachingAdapter",
    "offender-abstainer": "streambench.adapters.offenders.abstainer:AbstainerAdapter",
    "offender-rebuilder": "streambench.adapters.offenders.rebuilder:RebuilderAdapter",
    "offender-rounding-cache": "streambench.adapters.offenders.rounding_cache:RoundingCacheAdapter",
    # capacity offenders and their honest twins
    "offender-load-shedder": "streambench.adapters.offenders.capacity_cheats:LoadShedderAdapter",
    "offender-load-shedder-twin": "streambench.adapters.offenders.capacity_cheats:LoadShedderTwinAdapter",
    "offender-session-cache": "streambench.adapters.offenders.capacity_cheats:SessionCacheAdapter",
    "offender-session-cache-twin": "streambench.adapters.offenders.capacity_cheats:SessionCacheTwinAdapter",
    # reads --option path=...
    "offender-file-reader": "streambench.adapters.offenders.file_reader:FileReaderAdapter",
    # timing cheats
    "offender-stopped-clock": "streambench.adapters.offenders.clock:StoppedClockAdapter",
    "offender-late-work": "streambench.adapters.offenders.clock:LateWorkAdapter",
    "offender-reset-work": "streambench.adapters.offenders.clock:ResetWorkAdapter",
    # work hidden from the worker's clock in part, in threads that exit, in a process
    "offender-split-work": "streambench.adapters.offenders.hidden_work:SplitWorkAdapter",
    "offender-thread-work": "streambench.adapters.offenders.hidden_work:ThreadWorkAdapter",
    "offender-fork-work": "streambench.adapters.offenders.hidden_work:ForkWorkAdapter",
    # honest on a second sight
    "offender-first-sight": "streambench.adapters.offenders.first_sight:FirstSightAdapter",
    # leaves processes
    "offender-helper-process": "streambench.adapters.offenders.processes:HelperProcessAdapter",
    "offender-forker": "streambench.adapters.offenders.processes:ForkingAdapter",
    "offender-printer": "streambench.adapters.offenders.noisy:PrintingAdapter",  # prints to stdout
    # a non-daemon thread
    "offender-lingering-thread": "streambench.adapters.offenders.noisy:LingeringThreadAdapter",
    # under-reports its memory
    "offender-memory-hider": "streambench.adapters.offenders.memory:MemoryHiderAdapter",
    "offender-backdater": "streambench.adapters.offenders.backdater:BackdatingAdapter",  # claims zero delay
    "offender-stack-peeking": "streambench.adapters.sneaky:StackPeekingAdapter",
    "offender-global-leak": "streambench.adapters.sneaky:GlobalLeakAdapter",
    "offender-call-stack": "streambench.adapters.sneaky:CallStackAdapter",
    # planted faults (raise, NaN, shape, hang, exit, segv, leak)
    "faulty": "streambench.adapters.faulty:FaultyAdapter",
    # generic wrappers (options name the model) and a real third-party streaming model
    "torch-module": "streambench.adapters.torch_module:TorchModuleAdapter",
    "torchscript": "streambench.adapters.torchscript:TorchScriptAdapter",
    "onnx": "streambench.adapters.onnx_runtime:OnnxAdapter",  # extra: streambench[onnx]
    "silero-vad": "streambench.adapters.silero:SileroVadJit",  # extra: streambench[vad]
    "silero-vad-onnx": "streambench.adapters.silero:SileroVadOnnx",  # extra: streambench[vad]
    # seed 000: TopK sparse encoder, `--option variant=timestep|window` (stability protocol)
    "topk-encoder": "streambench.adapters.topk_encoder:TopKEncoderAdapter",
    # a model served elsewhere, one session per stream (docs/serving.md)
    # extras: streambench[websocket], [grpc], [triton]
    "websocket": "streambench.adapters.served.websocket_client:WebSocketAdapter",
    "grpc": "streambench.adapters.served.grpc_client:GrpcAdapter",
    "triton": "streambench.adapters.served.triton_client:TritonAdapter",
    # detection protocol (seed 002)
    "reference-detector": "streambench.adapters.spoof_detector:SpoofDetectorAdapter",
}
"""Registered adapters: short name -> ``module:Class``. The ``offender-*`` entries are the planted
offenders of :mod:`streambench.adapters.offenders` (test fixtures, not models), registered so the README's
demonstration can name them."""

ENTRY_POINT_GROUP = "streambench.adapters"
"""Installed plug-ins name their adapters in this entry-point group (``name = "module:Class"``, a
:class:`StreamingAdapter` subclass); a name of :data:`REGISTRY` cannot be taken by a plug-in."""

DATA_BOUND_OPTIONS = ("classes", "input_dims")


def plugins() -> dict[str, tuple[str, str]]:
    """The adapters installed packages declare (:data:`ENTRY_POINT_GROUP`): name -> (``module:Class``,
    the distribution that declared it); read from the installed metadata, nothing imported."""
    found: dict[str, tuple[str, str]] = {}
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name not in REGISTRY:
            dist = entry.dist.name if entry.dist is not None else "an unknown distribution"
            found.setdefault(entry.name, (entry.value, dist))
    return found


def known() -> dict[str, str]:
    """Every adapter name: the built-in registry's, then the plug-ins' (name -> ``module:Class``)."""
    return {**REGISTRY, **{name: target for name, (target, _) in plugins().items()}}


class AdapterLoadError(LookupError, ValueError):
    """An adapter name or its options could not be turned into an adapter: a configuration that cannot be
    run, hence a ``ValueError`` (what ``streambench.run`` raises for one) as well as a lookup's failure."""


_FLOORS = ("adapters", "harness", "protocols")


def moved_to(module_name: str | None) -> str | None:
    """Where a module of streambench's old import path lives now: streambench 0.2 installs its floors
    under one namespace (``adapters.contract`` -> ``streambench.adapters.contract``), so that
    no top-level name of ours collides with another distribution's (AdapterHub's ``adapters``). None for
    any other module."""
    if not module_name or module_name.split(".")[0] not in _FLOORS:
        return None
    return f"streambench.{module_name}"


def _old_path_error(name: str, module_name: str, exc: ImportError) -> AdapterLoadError | None:
    """The error for an adapter written against the old import path, naming the new one; None when
    ``exc`` is about something else."""
    missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
    for old in (module_name, missing):
        new = moved_to(old)
        if new is not None:
            where = "is" if old == module_name else f"imports {old!r}, which is"
            return AdapterLoadError(
                f"adapter {name!r}: module {module_name!r} {where} streambench's import path before 0.2; "
                f"it is now {new!r}. Adapter authors import the contract from the package itself: "
                "from streambench import StreamingAdapter, Frame, Prediction, AdapterInfo, AdapterOptions"
            )
    return None


def resolve(name: str) -> type:
    """Return the adapter class for a registry name or a ``module:Class`` path."""
    names = known()
    target = names.get(name, name)
    if ":" not in target:
        hint = difflib.get_close_matches(name, list(names), n=3, cutoff=0.5)
        suggestion = f" Did you mean {' or '.join(repr(h) for h in hint)}?" if hint else ""
        raise AdapterLoadError(
            f"unknown adapter {name!r}.{suggestion} Known adapters: {', '.join(sorted(names))}; "
            "or give an importable 'module:Class'."
        )
    module_name, _, class_name = target.partition(":")
    try:
        module = import_here(module_name)  # sys.path, then the working directory, as python -m
    except ImportError as exc:
        moved = _old_path_error(name, module_name, exc)
        if moved is not None:
            raise moved from exc
        raise AdapterLoadError(f"adapter {name!r}: cannot import module {module_name!r}: {exc}") from exc
    except Exception as exc:  # the module's own code failed: a SyntaxError, an error at import time
        raise AdapterLoadError(
            f"adapter {name!r}: importing module {module_name!r} failed: {_cause(exc)}"
        ) from exc
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
    plugin = plugins().get(name) if name not in REGISTRY else None
    if plugin is not None and not issubclass(cls, StreamingAdapter):
        raise AdapterLoadError(
            f"adapter {name!r}: the entry point of {plugin[1]} ({ENTRY_POINT_GROUP}) names {target!r}, which "
            "is not a StreamingAdapter subclass"
        )
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
        instance = _construct(name, cls, ())
    else:
        _check_option_names(name, options_model, options)
        for key, value in (data_bound or {}).items():
            if key in DATA_BOUND_OPTIONS and key in options_model.model_fields and key not in options:
                options[key] = value
        options = {key: _listed(options_model, key, value) for key, value in options.items()}
        try:
            parsed = options_model.model_validate(options)
        except ValidationError as exc:
            problems = "\n".join(
                f"  {'.'.join(str(p) for p in error['loc']) or '(options)'}: {error['msg']} "
                f"(got {error.get('input')!r})"
                for error in exc.errors()
            )
            raise AdapterLoadError(
                f"adapter {name!r}: invalid options:\n{problems}\n(streambench adapters {name} lists them)"
            ) from None
        instance = _construct(name, cls, (parsed,))
    _read_info(name, instance)
    if not isinstance(instance, Adapter):
        raise AdapterLoadError(
            f"adapter {name!r}: {type(instance).__name__} lacks the adapter interface "
            "(info, reset_state(), predict(frame))"
        )
    return instance


def _check_option_names(name: str, model: type[AdapterOptions], options: Mapping[str, Any]) -> None:
    """An option the adapter does not have: a clear error with a did-you-mean and the valid names."""
    known = list(model.model_fields)
    for key in options:
        if key not in known:
            hint = difflib.get_close_matches(key, known, n=2, cutoff=0.5)
            suggestion = f" Did you mean {' or '.join(repr(h) for h in hint)}?" if hint else ""
            raise AdapterLoadError(
                f"adapter {name!r} has no option {key!r}.{suggestion} Its options: {', '.join(known)} "
                f"(streambench adapters {name} describes them)"
            )


def _listed(model: type[AdapterOptions], key: str, value: Any) -> Any:
    """``a,b`` for an option that takes a list or tuple of strings: ``["a", "b"]`` (the JSON form works
    too, and a single name is a list of one)."""
    if not isinstance(value, str):
        return value
    annotation = model.model_fields[key].annotation
    kinds = {typing.get_origin(annotation)} | {typing.get_origin(a) for a in typing.get_args(annotation)}
    if kinds & {tuple, list}:
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def describe_options(name: str) -> list[tuple[str, str, str, str]]:
    """The adapter's options as ``(name, type, default, description)``; data-bound ones say so."""
    cls = resolve(name)
    model: type[AdapterOptions] | None = getattr(cls, "Options", None)
    if model is None or not issubclass(model, AdapterOptions):
        return []
    rows = []
    for key, field in model.model_fields.items():
        annotation = field.annotation
        kind = annotation.__name__ if isinstance(annotation, type) else str(annotation).replace("typing.", "")
        default = "(required)" if field.is_required() else repr(field.get_default(call_default_factory=True))
        about = field.description or ""
        if key in DATA_BOUND_OPTIONS:
            about = f"{about} [data-bound: filled from the data set when unset]".strip()
        rows.append((key, kind, default, about))
    return rows


_MODEL_EXITS = (Exception, SystemExit, GeneratorExit)
"""What a model's own code raises when it fails (``sys.exit()`` too); ``KeyboardInterrupt`` (Ctrl-C) and a
harness's own interrupts pass."""


def _construct(name: str, cls: type, args: tuple[Any, ...]) -> Any:
    """``cls(*args)``; an exception of the adapter's constructor (weights not found, a missing device, a
    ``sys.exit()``) becomes an :class:`AdapterLoadError` naming the adapter, the class and the cause."""
    try:
        return cls(*args)
    except _MODEL_EXITS as exc:
        raise AdapterLoadError(f"adapter {name!r}: {cls.__name__}() failed: {_cause(exc)}") from exc


def _read_info(name: str, instance: Any) -> None:
    """Read the built adapter's ``info`` once (the model's property, which the harness reads first): an
    exception there becomes an :class:`AdapterLoadError` naming the adapter, the class and the cause. An
    object without ``info`` is left to the interface check."""
    try:
        getattr(instance, "info", None)
    except _MODEL_EXITS as exc:
        cls = type(instance).__name__
        raise AdapterLoadError(f"adapter {name!r}: {cls}.info failed: {_cause(exc)}") from exc


def _cause(exc: BaseException) -> str:
    """An exception as one line: its type, its message, and where it was raised (the file and line of
    the innermost frame; a SyntaxError's own file and line)."""
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} ({exc.filename}, line {exc.lineno})"
    where = ""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        where = f" ({tb.tb_frame.f_code.co_filename}, line {tb.tb_lineno})"
    return f"{type(exc).__name__}: {exc}{where}"
