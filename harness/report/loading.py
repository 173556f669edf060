"""What one report shows of one run: its result files, read once (DESIGN.md "Results").

A run directory may hold ``result.json`` with ``arrays.npz`` (the online protocol, harness/results.py),
``robustness.json`` (harness/robustness_run.py) and ``causality.json`` (harness/causality_run.py), in
any combination: ``streambench run --protocol robustness`` writes a directory of its own. Each part
that is missing or unreadable is ``None`` with the reason, which the report shows in its place.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from harness.causality_run import RESULT_FILE as CAUSALITY_FILE
from harness.causality_run import CausalityResult
from harness.headline import PROTOCOL_MODULES, RESULT_FILES, Figure, figures_of
from harness.results import (
    ARRAYS_FILE,
    RESULT_FILE,
    ResultFileError,
    RunResult,
    load_protocol_result,
    load_recordings,
    load_result,
)
from harness.robustness_run import RESULT_FILE as ROBUSTNESS_FILE
from harness.robustness_run import RobustnessResult
from protocols.recording import StreamRecording

__all__ = ["RunBundle", "load_bundle"]


@dataclass
class RunBundle:
    """Everything the report reads of one run directory; ``missing`` maps a part to why it is absent."""

    run_dir: Path
    name: str
    result: RunResult | None = None
    recordings: list[StreamRecording] | None = None
    robustness: RobustnessResult | None = None
    causality: CausalityResult | None = None
    missing: dict[str, str] = field(default_factory=dict)
    protocols: dict[str, list[Figure]] = field(default_factory=dict)  # detection, stability, hysteresis


def _load_model(path: Path, model: type[BaseModel]) -> tuple[BaseModel | None, str | None]:
    if not path.is_file():
        return None, f"no {path.name} in this run directory"
    try:
        return load_protocol_result(path, model), None
    except ResultFileError as exc:
        return None, str(exc).splitlines()[0]


def load_bundle(run_dir: Path) -> RunBundle:
    """Read every result file of ``run_dir``; a missing or broken part becomes a reason, not an error."""
    bundle = RunBundle(run_dir=run_dir, name=run_dir.name)
    if (run_dir / RESULT_FILE).is_file():
        try:
            bundle.result = load_result(run_dir)
            bundle.name = bundle.result.run_id
        except ResultFileError as exc:
            bundle.missing["result"] = str(exc)
    else:
        bundle.missing["result"] = f"no {RESULT_FILE} in this run directory (not an online run)"
    if bundle.result is not None:
        try:
            bundle.recordings = load_recordings(run_dir)
        except ResultFileError as exc:
            bundle.missing["arrays"] = str(exc)
    else:
        bundle.missing["arrays"] = f"{ARRAYS_FILE} is read only with a readable {RESULT_FILE}"
    robust, reason = _load_model(run_dir / ROBUSTNESS_FILE, RobustnessResult)
    if isinstance(robust, RobustnessResult):
        bundle.robustness = robust
        if bundle.result is None:
            bundle.name = robust.run_id
    else:
        bundle.missing["robustness"] = reason or "unreadable"
    causal, reason = _load_model(run_dir / CAUSALITY_FILE, CausalityResult)
    if isinstance(causal, CausalityResult):
        bundle.causality = causal
        if bundle.result is None and bundle.robustness is None:
            bundle.name = causal.run_id
    else:
        bundle.missing["causality"] = reason or "unreadable"
    for kind in PROTOCOL_MODULES:  # the other protocols: their headline figures (harness/headline.py)
        path = run_dir / RESULT_FILES[kind]  # type: ignore[index]
        if not path.is_file():
            continue
        module_name, class_name = PROTOCOL_MODULES[kind]
        try:
            loaded = load_protocol_result(path, getattr(importlib.import_module(module_name), class_name))
        except ResultFileError as exc:
            bundle.missing[kind] = str(exc).splitlines()[0]
            continue
        bundle.protocols[kind] = figures_of(loaded)
        if bundle.result is None and bundle.robustness is None and bundle.causality is None:
            bundle.name = str(getattr(loaded, "run_id"))  # noqa: B009
    return bundle
