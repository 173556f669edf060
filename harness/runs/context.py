"""What :meth:`RunProtocol.measure <streambench.harness.runs.interface.RunProtocol.measure>` is handed: one
run's configuration with its data seed fixed and its id, the protocol's configuration, and the chores
every protocol shares (DESIGN.md "Results"): the data set's streams, the model (sealed in a worker by
default: :func:`~streambench.harness.execution.model_runner.open_runner`), progress, the environment it
was measured in, the result record with its identity filled in, and the result file written atomically
and indexed in the run store."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Generic

from streambench.adapters.contract import Stream
from streambench.harness.datasets.catalog import SeedKind, make_streams, make_warmup_stream
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.execution.model_runner import ExecutionMode, ModelRunner, open_runner
from streambench.harness.execution.sealed_feed import Extra
from streambench.harness.execution.setup import environment_for
from streambench.harness.instruments.manifest import EnvironmentManifest
from streambench.harness.io.atomic import atomic_write_text
from streambench.harness.io.json_file import strict_json
from streambench.harness.io.store_layout import check_run_dir
from streambench.harness.results.files import EnvironmentRecord, write_protocol_result
from streambench.harness.runs.catalog import index_written
from streambench.harness.runs.contract import ConfigT, ResultT

__all__ = ["RunContext"]

_DATA = object()
"""``warmup`` left to :meth:`RunContext.model`: the run data set's warm-up stream."""


@dataclasses.dataclass
class RunContext(Generic[ConfigT, ResultT]):
    """One run of a protocol as its ``measure()`` sees it. ``run``: the run configuration, its data set's
    seed fixed (``seed_kind``: secret, public or None); ``config``: the protocol's own; ``run_id``: the
    run directory's name under ``run.output_dir``."""

    run: RunConfig
    config: ConfigT
    run_id: str
    seed_kind: SeedKind | None
    progress: ProgressHook | None
    result_model: type[ResultT]
    result_file: str
    own_streams: bool = False
    """The protocol builds its streams itself: the result names no data seed kind."""
    adapter_module: str | None = None
    """The adapter class's module (its package's version and commit go into the environment): set by
    :meth:`model`; a protocol that builds its model otherwise sets it."""
    execution_mode: ExecutionMode | None = None
    """Where the adapter ran (set by :meth:`model`)."""
    hashed_streams: Sequence[Stream] | None = None
    """The streams whose hash the environment records (None: the data set's, :meth:`streams`)."""
    extra: Any = None
    """What the protocol's own printing needs besides its result (``Outcome.extra``)."""
    _streams: list[Stream] | None = dataclasses.field(default=None, init=False, repr=False)
    _environment: tuple[EnvironmentManifest, str] | None = dataclasses.field(
        default=None, init=False, repr=False
    )
    _written: object = dataclasses.field(default=None, init=False, repr=False)
    _indexed: object = dataclasses.field(default=None, init=False, repr=False)

    # -- what is measured ------------------------------------------------------------------------------

    def streams(self) -> list[Stream]:
        """The data set's scored streams, in their fixed order (built once)."""
        if self._streams is None:
            self._streams = make_streams(self.run.data)
        return self._streams

    def warmup_stream(self) -> Stream | None:
        """An unscored stream of the data set of ``engine.warmup_frames`` frames (None: no warm-up)."""
        frames = self.run.engine.warmup_frames
        return make_warmup_stream(self.run.data, frames) if frames else None

    @contextlib.contextmanager
    def model(
        self,
        sample: Stream | None = None,
        warmup: Stream | object | None = _DATA,
        *,
        record: tuple[Extra, ...] | None = None,
        record_declared: tuple[Extra, ...] = (),
    ) -> Iterator[ModelRunner]:
        """The run's adapter built, checked against ``sample`` (default: the first stream) and warmed up
        (default: on :meth:`warmup_stream`), sealed in a worker unless the run says ``--in-process``;
        ``runner.run_stream(stream, role)`` is a stream's recording. ``record``: the prediction fields the
        engine records, in place of ``engine.record``; ``record_declared``: more, where the adapter
        declares them (:func:`~streambench.harness.execution.model_runner.open_runner`)."""
        config = self.run
        if record is not None:
            config = config.model_copy(update={"engine": config.engine.model_copy(update={"record": record})})
        first = sample if sample is not None else self.streams()[0]
        warm = self.warmup_stream() if warmup is _DATA else warmup
        assert warm is None or isinstance(warm, Stream)
        opened = open_runner(
            config, first, warm, own_streams=self.own_streams, record_declared=record_declared
        )
        with opened as runner:
            self.adapter_module, self.execution_mode = runner.module, runner.mode
            yield runner

    def step(self, done: int, total: int, label: str) -> None:
        """Report progress: ``done`` of ``total`` steps, the last one named ``label``."""
        if self.progress is not None:
            self.progress(done, total, label)

    # -- what is written -------------------------------------------------------------------------------

    def environment(self) -> tuple[EnvironmentManifest, str]:
        """The environment lock manifest (seed 004 §6.2.2) and its timing fingerprint, collected once: the
        seeds, the hash of :attr:`hashed_streams`, the adapter's package (:attr:`adapter_module`)."""
        if self._environment is None:
            if self.adapter_module is None:
                raise RuntimeError("the environment names the adapter's module: open model() first")
            hashed = self.hashed_streams if self.hashed_streams is not None else self.streams()
            self._environment = environment_for(self.run, hashed, self.adapter_module)
        return self._environment

    def result(self, **fields: Any) -> ResultT:
        """The protocol's result with ``fields``, the run's identity (id, time of writing, adapter) and,
        for a result that records its environment (:class:`~streambench.harness.results.files.
        EnvironmentRecord`), the environment, where the adapter ran and the data seed's kind filled in;
        ``fields`` override them."""
        filled: dict[str, Any] = {
            "run_id": self.run_id,
            "created_at": datetime.now(timezone.utc),
            "adapter": self.run.adapter,
        }
        if issubclass(self.result_model, EnvironmentRecord):
            environment, fingerprint = self.environment()
            filled.update(
                environment=environment, fingerprint=fingerprint, execution_mode=self.execution_mode
            )
            if not self.own_streams:
                filled["dataset_seed_kind"] = self.seed_kind
        return self.result_model(**{**filled, **fields})

    @property
    def run_dir(self) -> Path:
        return self.run.output_dir / self.run_id

    def directory(self) -> Path:
        """The run directory, created (never a symbolic link: it would write outside the store)."""
        run_dir = check_run_dir(self.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        return run_dir

    def save(
        self,
        result: ResultT,
        *,
        index: bool = True,
        files: Callable[[Path], None] | None = None,
        replace: bool = False,
    ) -> Path:
        """Write ``result`` to the result file atomically, as strict JSON, after ``files(run_dir)`` (the
        files it accompanies: the result file last, so its presence means they are all there), and index
        the run (``index``; an index that cannot be updated costs a warning, never the result). The first
        write refuses a result file that exists already unless ``replace``; a later one (a protocol that
        writes as it goes) replaces its own. Writing or indexing one result twice does it once. Returns the
        run directory."""
        run_dir = self.run_dir
        if result is not self._written:
            first = self._written is None and not replace
            path = run_dir / self.result_file
            if first and path.exists():  # never overwrite a measured result
                raise ValueError(f"{path}: exists already; give the run another --run-id")
            run_dir = self.directory()
            if files is not None:
                files(run_dir)
            if first:  # refuses a result file written meanwhile too
                write_protocol_result(self.run.output_dir, self.run_id, self.result_file, result)
            else:
                atomic_write_text(run_dir / self.result_file, strict_json(result))
            self._written = result
        if index and result is not self._indexed:
            index_written(run_dir)
            self._indexed = result
        return run_dir
