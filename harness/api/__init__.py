"""streambench from Python: run a protocol, or an A/B latency gate, and get the typed
result back, with the configuration models the command line uses (no second set of defaults).

In the manner of pyperf's ``Runner`` and lm-evaluation-harness's ``simple_evaluate``: the command line is a
thin layer over these functions (``streambench run`` builds a :class:`RunConfig` from its options and
calls :func:`run`; ``streambench ab`` calls :func:`ab`). Exposed as ``streambench.run`` / ``streambench.ab``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from pydantic import BaseModel

from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.executor import ProgressHook, RunInterrupted
from streambench.harness.execution.rounds import Rounds, RoundsConfig, Side
from streambench.harness.execution.worker_process import WorkerCommand
from streambench.harness.io.store_layout import check_results_dir
from streambench.harness.runs import registry
from streambench.harness.runs.ab import ABReport, On, run_ab
from streambench.harness.runs.ab_settings import DEFAULT_GATE
from streambench.harness.runs.contract import Outcome
from streambench.harness.sweep.interrupts import interrupted_by

__all__ = ["ab", "resume", "run"]

_ISOLATION = IsolationConfig()
"""The isolation's defaults (``ab``'s ``sealed``)."""


def run(
    config: RunConfig | Mapping[str, Any],
    protocol: str = registry.DEFAULT,
    protocol_config: BaseModel | None = None,
    progress: ProgressHook | None = None,
    given: frozenset[str] | None = None,
) -> Outcome[Any]:
    """Run ``config``'s adapter through ``protocol`` (a registered name) and write its run directory under
    ``config.output_dir``; returns the :class:`Outcome`: ``outcome.result`` is the protocol's typed result
    (a :class:`~streambench.harness.results.files.RunResult` for ``online``, as ``result.json`` holds
    it), ``outcome.run_dir`` the directory. ``config``: a :class:`RunConfig`, or a mapping of its fields
    (validated as ``RunConfig.model_validate`` does: a configuration file's table); anything else is a
    ``TypeError``. ``protocol_config``: the protocol's own configuration (an instance of its
    ``config_model``); None: its defaults. Raises ValueError (naming the field or the protocol) when the
    configuration cannot be run, before anything is measured (an adapter whose module does not import
    or that has no such option, too). Ctrl-C reaches the caller as ``KeyboardInterrupt`` (SIGTERM as
    :class:`~streambench.harness.execution.executor.RunInterrupted`) once what was measured is written
    (an incomplete run directory, finished by :func:`resume`). The protocol refuses run options it would
    ignore, as on the command line (``given``: the options the caller chose, by their command-line names;
    None: those whose fields ``config`` sets explicitly,
    :func:`~streambench.harness.runs.contract.options_set`)."""
    from streambench.harness.runs.catalog import check_joinable
    from streambench.harness.runs.contract import options_set

    config = _as_run_config(config, "config")
    _callable_or_none(progress, "progress")
    check_results_dir(config.output_dir, "output_dir")
    chosen = registry.get(protocol)
    if protocol_config is None:
        protocol_config = chosen.load_config(None)
    elif chosen.config_model is None or not isinstance(protocol_config, chosen.config_model):
        expected = chosen.config_model.__name__ if chosen.config_model is not None else "none"
        raise ValueError(
            f"protocol_config: the {protocol} protocol takes a {expected} configuration, "
            f"not {type(protocol_config).__name__}"
        )
    if chosen.name != registry.DEFAULT:  # the default protocol writes a new run (or refuses an old one)
        check_joinable(config)
    chosen.check_options(config, options_set(config) if given is None else given)
    try:
        outcome = chosen.execute(config, protocol_config, progress)
    except RunInterrupted as exc:  # outside the measured window: nothing more to write
        _interrupted(str(exc))
    reason = chosen.incomplete_reason(outcome.result)
    if reason is not None and reason.startswith("interrupted"):  # the measured streams are written
        _interrupted(f"{reason}; what was measured is kept: streambench run --resume {outcome.run_dir}")
    return outcome


def resume(run_dir: str | os.PathLike[str], progress: ProgressHook | None = None) -> Outcome[Any]:
    """Finish the interrupted run in ``run_dir`` with its own configuration, as ``streambench run --resume``:
    the protocol that can finish it does (none can: the default protocol's resume raises, saying what is
    missing there). ``outcome.unchanged`` is true when the run was complete and nothing ran. Interruptions
    reach the caller as in :func:`run`."""
    directory = Path(run_dir)
    chosen = registry.resumer(directory)
    try:
        outcome = chosen.resume(directory, progress)
    except RunInterrupted as exc:
        _interrupted(str(exc))
    reason = chosen.incomplete_reason(outcome.result)
    if reason is not None and reason.startswith("interrupted"):
        _interrupted(f"{reason}; what was measured is kept: streambench run --resume {outcome.run_dir}")
    return outcome


def _as_run_config(value: object, name: str) -> RunConfig:
    """``value`` as a :class:`RunConfig`: one, or a mapping of its fields (validated: a ValueError naming
    the field); a ``TypeError`` naming the argument for anything else."""
    if isinstance(value, RunConfig):
        return value
    if isinstance(value, Mapping):
        return RunConfig.model_validate(dict(value))
    shown = "None" if value is None else f"a {type(value).__name__} ({value!r:.60})"
    raise TypeError(f"{name}: expected a streambench.RunConfig or a mapping of its fields, got {shown}")


def _callable_or_none(value: object, name: str) -> None:
    """A ``TypeError`` naming the argument unless ``value`` is None or callable."""
    if value is not None and not callable(value):
        raise TypeError(f"{name}: expected a callable or None, got a {type(value).__name__} ({value!r:.60})")


def _interrupted(why: str) -> NoReturn:
    """Raise the interruption the caller would have seen without the run: ``KeyboardInterrupt`` for
    Ctrl-C (SIGINT), :class:`RunInterrupted` for SIGTERM."""
    if interrupted_by(why) == "SIGTERM":
        raise RunInterrupted(why)
    raise KeyboardInterrupt(why)


def ab(
    base: RunConfig | Mapping[str, Any],
    head: RunConfig | Mapping[str, Any],
    rounds: RoundsConfig | None = None,
    fail_on: str = DEFAULT_GATE.fail_on,
    *,
    on: On = DEFAULT_GATE.on,
    confidence: float = DEFAULT_GATE.confidence,
    pass_confidence: float = DEFAULT_GATE.pass_confidence,
    force: bool = DEFAULT_GATE.force,
    base_command: WorkerCommand | None = None,
    head_command: WorkerCommand | None = None,
    sealed: bool = _ISOLATION.sealed,
    progress: Callable[[Rounds], None] | None = None,
) -> ABReport:
    """Base against head latency in interleaved (or duet) rounds of fresh worker processes, gated by
    ``fail_on`` (``"p50:+5%,p99:+20%"``): ``report.verdict`` is ``no regression``, ``regression`` or
    ``inconclusive`` and ``report.exit_code`` what ``streambench ab`` exits with. Both sides see the same
    streams (one secret seed drawn for both where the data set's seed is unset). ``base_command`` /
    ``head_command``: another interpreter or checkout for a side (``PYTHONPATH``), as
    ``--base-path`` / ``--base-python`` give on the command line; sealed workers where both sides run this
    harness (:func:`~streambench.harness.execution.rounds.choose_execution`). ``progress``: called after
    each pair of rounds with the job so far. Defaults: the gate's are
    :class:`~streambench.harness.runs.ab_settings.GateConfig`'s fields, the rounds' :class:`RoundsConfig`'s,
    ``sealed`` :class:`IsolationConfig`'s (as ``streambench ab``'s and the ``streambench_ab`` fixture's)."""
    from streambench.harness.results.compare import FailOnSpec

    base, head = _as_run_config(base, "base"), _as_run_config(head, "head")
    if rounds is not None and not isinstance(rounds, RoundsConfig):
        shown = f"a {type(rounds).__name__} ({rounds!r:.60})"
        raise TypeError(f"rounds: expected a streambench.RoundsConfig or None, got {shown}")
    _callable_or_none(progress, "progress")
    sides = [
        Side(label=label, run=config, command=command or WorkerCommand())
        for label, config, command in (("base", base, base_command), ("head", head, head_command))
    ]
    return run_ab(
        sides[0],
        sides[1],
        rounds or RoundsConfig(),
        FailOnSpec.parse(fail_on).rules,
        on,
        confidence,
        force,
        progress=progress,
        isolation=IsolationConfig(sealed=sealed),
        pass_confidence=pass_confidence,
    )
