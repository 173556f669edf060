"""The one protocol interface: :class:`RunProtocol`, a template method (Gamma et al., "Design Patterns",
1994) in the manner of torchmetrics' ``Metric``: the base owns the run, a protocol overrides what it
measures and how it is headlined.

:meth:`RunProtocol.execute` runs a protocol: :meth:`~RunProtocol.prepare` (its default adapter, its
refusals), the data set's seed fixed once per run in the harness's process (a secret one where it is
unset: :func:`~streambench.harness.runs.catalog.fix_data_seed`) and torch's, the run named
(:meth:`~RunProtocol.new_run_id`), a run directory that holds the protocol's result already refused before
anything runs (:meth:`~RunProtocol.check_new`), then :meth:`~RunProtocol.measure` with a
:class:`~streambench.harness.runs.context.RunContext` (streams, the model sealed in a worker or in process,
progress, the environment, the result record's identity), and what it returns written atomically into
``<output_dir>/<run_id>/<result_file>`` and indexed. A protocol is a subclass that says who it is::

    class ThroughputProtocol(RunProtocol[ThroughputConfig, ThroughputResult]):
        name = "throughput"
        summary = "frames per second at batch 1"
        result_file = "throughput.json"
        result_model = ThroughputResult  # extends RunRecord: run_id, created_at, adapter come with it
        config_model = ThroughputConfig

        def measure(self, run: RunContext[ThroughputConfig, ThroughputResult]) -> ThroughputResult: ...
        def headline(self, result: ThroughputResult) -> list[Figure]: ...

Everything else is a method of :class:`~streambench.harness.runs.contract.ProtocolContract` (what the
command line, the sweep, the store and the report call) with a default it may override:

===========================================  ========================================================
methods                                      default
===========================================  ========================================================
``print_result``, ``closing_note``           its headline figures, exit code 0; no closing note
``can_resume``, ``resume``                   ``run --resume`` refuses its runs
``warnings``, ``incomplete_reason``          no warnings; always complete
``read``, ``report_sections``                its result file read; its headline listed in the report
``frame_latencies_ns``                       none kept (``compare``'s rank test reads another's)
``sweep_points``, ``sweep_row``, ...         one run per sweep entry, when ``sweepable`` (default: no)
===========================================  ========================================================

It joins the registry (:mod:`streambench.harness.runs.registry`) by a line there, an installed package's
``streambench.protocols`` entry point, or :func:`~streambench.harness.runs.registry.register`. A protocol
written against 0.2's interface (its own ``execute``, the parts of :mod:`streambench.harness.runs.parts`)
still runs: ``execute`` may be overridden whole.
"""

from __future__ import annotations

from typing import ClassVar

from streambench.harness.datasets.catalog import SeedKind
from streambench.harness.execution.config import RunConfig, run_id_for
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.runs.catalog import fix_data_seed
from streambench.harness.runs.context import RunContext
from streambench.harness.runs.contract import ConfigT, Outcome, ProtocolContract, ResultT, SweepPoint

__all__ = ["Outcome", "RunContext", "RunProtocol", "SweepPoint"]

_RUN_DEFAULT_ADAPTER = RunConfig.model_fields["adapter"].default


class RunProtocol(ProtocolContract[ConfigT, ResultT]):
    """A protocol whose run the base carries out; see the module docstring."""

    run_options: ClassVar[frozenset[str]] = frozenset({"isolate", "sealed"})
    """Its context holds the model sealed in a worker, or in process where the run says so."""
    default_adapter: ClassVar[str | None] = None
    """The adapter it runs when the run names none (the run configuration's default, ``reference``);
    None: that one."""

    def execute(self, run: RunConfig, config: ConfigT, progress: ProgressHook | None) -> Outcome[ResultT]:
        """The template: prepare, fix the seeds, name the run, refuse an existing result, measure, write
        and index (see the module docstring)."""
        import torch

        if config is None:
            config = self.load_config(None)  # its defaults
        run, config = self.prepare(run, config)
        torch.manual_seed(run.torch_seed)
        seed_kind = None
        if not self.own_streams:
            run, seed_kind = fix_data_seed(run)  # once per run, in this (the harness's) process
        context = self.context(run, config, self.new_run_id(run), seed_kind, progress)
        self.check_new(context)
        result = self.measure(context)
        return Outcome(result, context.save(result), context.extra)

    def context(
        self,
        run: RunConfig,
        config: ConfigT,
        run_id: str,
        seed_kind: SeedKind | None,
        progress: ProgressHook | None,
    ) -> RunContext[ConfigT, ResultT]:
        """The :class:`RunContext` of one run of this protocol (a resumed one too)."""
        model: type[ResultT] = self.result_model  # type: ignore[assignment]  # ResultT's model by declaration
        return RunContext(run, config, run_id, seed_kind, progress, model, self.result_file, self.own_streams)

    def prepare(self, run: RunConfig, config: ConfigT) -> tuple[RunConfig, ConfigT]:
        """The run and configuration this protocol measures, before anything is built: its
        :attr:`default_adapter` in place of the run's default; a ValueError refuses what it cannot run."""
        if self.default_adapter is not None and run.adapter == _RUN_DEFAULT_ADAPTER:
            run = run.model_copy(update={"adapter": self.default_adapter})
        return run, config

    def new_run_id(self, run: RunConfig) -> str:
        """The run's id: the one given, else the time, the adapter, this protocol and a random suffix."""
        return run.run_id or run_id_for(run.adapter, self.name)

    def check_new(self, run: RunContext[ConfigT, ResultT]) -> None:
        """Refuse, before anything runs, a run directory that holds this protocol's result already."""
        path = run.run_dir / self.result_file
        if path.exists():
            raise ValueError(f"{path}: exists already; give the run another --run-id")

    def measure(self, run: RunContext[ConfigT, ResultT]) -> ResultT:
        """What the protocol measures: runs the model on ``run``'s streams and returns its result
        (:meth:`RunContext.result <streambench.harness.runs.context.RunContext.result>` fills in the run's
        identity and environment)."""
        raise NotImplementedError(f"the {self.name} protocol implements neither measure() nor execute()")
