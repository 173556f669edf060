"""streambench from Python (issue 26, item 2): run a protocol, or an A/B latency gate, and get the typed
result back, with the configuration models the command line uses (no second set of defaults).

In the manner of pyperf's ``Runner`` and lm-evaluation-harness's ``simple_evaluate``: the command line is a
thin layer over these functions (``streambench run`` builds a :class:`RunConfig` from its options and
calls :func:`run`; ``streambench ab`` calls :func:`ab`). Exposed as ``streambench.run`` / ``streambench.ab``.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.execution.rounds import Rounds, RoundsConfig, Side
from streambench.harness.execution.worker_process import WorkerCommand
from streambench.harness.runs import registry
from streambench.harness.runs.ab import ABReport, On, run_ab
from streambench.harness.runs.interface import Outcome

__all__ = ["ab", "run"]

DEFAULT_GATE = "p50:+5%"
"""The rule ``ab`` gates on unless told otherwise (``streambench ab --fail-on``'s default)."""


def run(
    config: RunConfig,
    protocol: str = registry.DEFAULT,
    protocol_config: BaseModel | None = None,
    progress: ProgressHook | None = None,
) -> Outcome:
    """Run ``config``'s adapter through ``protocol`` (a registered name) and write its run directory under
    ``config.output_dir``; returns the :class:`Outcome`: ``outcome.result`` is the protocol's typed result
    (a :class:`~streambench.harness.results.files.RunResult` for ``online``, as ``result.json`` holds
    it), ``outcome.run_dir`` the directory. ``protocol_config``: the protocol's own configuration (an
    instance of its ``config_model``); None: its defaults. Raises ValueError (naming the field or the
    protocol) before anything runs when the configuration cannot be run."""
    from streambench.harness.runs.catalog import check_joinable

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
    return chosen.execute(config, protocol_config, progress)


def ab(
    base: RunConfig,
    head: RunConfig,
    rounds: RoundsConfig | None = None,
    fail_on: str = DEFAULT_GATE,
    *,
    on: On = "both",
    confidence: float = 0.95,
    pass_confidence: float = 0.995,
    force: bool = False,
    base_command: WorkerCommand | None = None,
    head_command: WorkerCommand | None = None,
    sealed: bool = True,
    progress: Callable[[Rounds], None] | None = None,
) -> ABReport:
    """Base against head latency in interleaved (or duet) rounds of fresh worker processes, gated by
    ``fail_on`` (``"p50:+5%,p99:+20%"``): ``report.verdict`` is ``no regression``, ``regression`` or
    ``inconclusive`` and ``report.exit_code`` what ``streambench ab`` exits with. Both sides see the same
    streams (one secret seed drawn for both where the data set's seed is unset). ``base_command`` /
    ``head_command``: another interpreter or checkout for a side (``PYTHONPATH``), as
    ``--base-path`` / ``--base-python`` give on the command line; sealed workers where both sides run this
    harness (:func:`~streambench.harness.execution.rounds.choose_execution`). ``progress``: called after
    each pair of rounds with the job so far."""
    from streambench.harness.results.compare import FailOnSpec

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
