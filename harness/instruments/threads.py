"""Thread settings of a run: set them before the model is built, record what is in force.

Seed 004 §6.2.2 "计时与稳定性建议" asks to fix random seeds and thread binding ("固定随机种子与线程绑定",
e.g. ``torch.set_num_threads(1)``), and its environment lock list ("环境锁定清单") asks for the thread /
OMP environment variables (e.g. ``OMP_NUM_THREADS=1``); §6.2.3 "硬件与环境" asks for the concurrency
setting (single- or multi-threaded). :func:`apply` sets what a :class:`ThreadConfig` asks for and returns
a :class:`ThreadRecord` read back from torch, so the result states what was really in force.

The default is **one intra-op thread**: the harness measures a model at batch 1, one
frame at a time, and at batch 1 a pool of one thread per core mostly waits, spins and preempts the
thread that feeds the frames (torch's OpenMP workers spin after each parallel region): on a shared
2-core machine Silero VAD's p95 was 355x lower with one thread than with torch's default of two
(benchmarks/test_thread_default.py, docs/performance.md). ``intra_op = "torch"`` (or ``null`` in JSON)
leaves torch's own default; any number sets it. An adapter that sets its own count while it is built
(``torch.set_num_threads`` in its constructor, as the ``silero_vad`` package does on import) keeps it:
:func:`read_adapter_threads` reads the count in the adapter's process once the model is built, and
:func:`settle` records who set it and warns when the threads that run at once exceed the process's cores
(:func:`oversubscription`).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "THREAD_ENV_VARS",
    "AdapterThreads",
    "ThreadConfig",
    "ThreadRecord",
    "apply",
    "oversubscription",
    "read_adapter_threads",
    "read_thread_env",
    "settle",
    "thread_summary",
    "usable_cores",
]

THREAD_ENV_VARS: tuple[str, ...] = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "OMP_PROC_BIND",
    "OMP_PLACES",
    "KMP_AFFINITY",
)
"""Environment variables that size or bind the thread pools of the BLAS / OpenMP libraries (seed 004 lock
list: "线程/OMP 环境变量"). All are recorded, set or not (``None`` = unset)."""


class ThreadConfig(BaseModel):
    """What to set. ``intra_op`` defaults to 1 (batch 1: the model, not the scheduler, is measured);
    ``"torch"`` or ``None`` leaves torch's own value, as does ``None`` for ``inter_op`` (its default).

    ``env`` is written to ``os.environ``. Environment variables only affect libraries that read them when
    they initialise *afterwards*: torch's intra-op pool, OpenMP and MKL read theirs when torch is imported
    or first runs parallel work, so setting ``OMP_NUM_THREADS`` here does not resize a pool that already
    exists — use ``intra_op`` for torch, and set the variables in the shell (or before importing torch)
    when they must govern torch itself. They still reach libraries loaded later and child processes.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    intra_op: int | None = Field(
        default=1,
        ge=1,
        description="torch.set_num_threads: threads one predict() may use; default 1 (batch 1); "
        '"torch" (null in JSON): leave torch\'s own default, one per core',
    )
    inter_op: int | None = Field(
        default=None, ge=1, description="torch.set_num_interop_threads; None = leave"
    )
    env: dict[str, str] = Field(default_factory=dict, description="environment variables to set")

    @field_validator("intra_op", mode="before")
    @classmethod
    def _torch_means_leave(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() == "torch":
            return None  # TOML has no null: "torch" says "leave torch's own default"
        return value


SetBy = Literal["streambench default", "configuration", "torch default", "adapter"]
"""Who chose the intra-op thread count: the harness's default (1), the run's configuration, torch's own
default (``intra_op = "torch"``), or the adapter while it was built (its own ``torch.set_num_threads``)."""


class AdapterThreads(BaseModel):
    """torch's thread counts in the adapter's process, read once the model is built
    (:func:`read_adapter_threads`): the figures that govern its ``predict()``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    process: Literal["worker", "harness"] = Field(
        description="worker: the adapter's own process (isolated, sealed); harness: this one (in-process)"
    )
    torch_imported: bool = Field(description="False: the model does not use torch; its setting did not apply")
    intra_op: int | None = Field(None, description="torch.get_num_threads() once the model was built")
    inter_op: int | None = None
    applied_intra_op: int | None = Field(
        None, description="the count the harness set before the model was built (None: torch not imported)"
    )
    cores: int | None = Field(None, description="CPUs the process may run on (its affinity)")


class ThreadRecord(BaseModel):
    """What :func:`apply` was asked for, what was in force before, and what is in force now (read back)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requested: ThreadConfig
    intra_op_before: int
    inter_op_before: int
    intra_op: int = Field(description="torch.get_num_threads() after apply")
    inter_op: int = Field(description="torch.get_num_interop_threads() after apply")
    intra_op_applied: bool = Field(description="False when a requested value is not what torch reports")
    inter_op_applied: bool
    intra_op_reason: str | None = None
    inter_op_reason: str | None = Field(
        default=None, description="why the requested inter-op count could not be set (torch allows it once)"
    )
    env: dict[str, str | None] = Field(description="thread variables (and any set here) after apply")
    env_note: str = (
        "environment variables only affect libraries initialised after they are set; torch's own pools "
        "are sized by intra_op / inter_op"
    )
    set_by: SetBy | None = Field(
        None,
        description="who chose the intra-op count in force in the adapter's process once the model was "
        "built; null: torch was not imported there (or a run recorded before 0.2.0)",
    )
    adapter_process: AdapterThreads | None = Field(
        None, description="torch's threads in the adapter's process, read once the model was built"
    )
    warning: str | None = Field(
        None, description="the threads that run at once exceed the cores of the adapter's process"
    )


def read_thread_env(extra: tuple[str, ...] = ()) -> dict[str, str | None]:
    """The thread variables of :data:`THREAD_ENV_VARS` (and ``extra``) as they are now; ``None`` = unset."""
    names = dict.fromkeys((*THREAD_ENV_VARS, *extra))
    return {name: os.environ.get(name) for name in names}


def apply(config: ThreadConfig | None = None) -> ThreadRecord:
    """Set the thread configuration (call it before the model is built) and return what is in force.

    ``torch.set_num_interop_threads`` may be called only once per process and only before any inter-op
    parallel work; when torch refuses, the record keeps the value in force, ``inter_op_applied=False`` and
    torch's message as the reason, instead of failing the run. A request equal to the current value is
    not sent to torch at all (so it never trips that rule).
    """
    import torch

    config = config if config is not None else ThreadConfig()
    intra_before = torch.get_num_threads()
    inter_before = torch.get_num_interop_threads()

    for name, value in config.env.items():
        os.environ[name] = value

    intra_reason: str | None = None
    if config.intra_op is not None and config.intra_op != intra_before:
        try:
            torch.set_num_threads(config.intra_op)
        except RuntimeError as exc:  # pragma: no cover - torch accepts any positive count
            intra_reason = f"torch.set_num_threads({config.intra_op}) failed: {exc}"

    inter_reason: str | None = None
    if config.inter_op is not None and config.inter_op != inter_before:
        try:
            torch.set_num_interop_threads(config.inter_op)
        except RuntimeError as exc:
            inter_reason = (
                f"torch.set_num_interop_threads({config.inter_op}) refused (it can be called once per "
                f"process, before any inter-op parallel work): {str(exc).strip()}"
            )

    intra_now = torch.get_num_threads()
    inter_now = torch.get_num_interop_threads()
    intra_ok = config.intra_op is None or intra_now == config.intra_op
    inter_ok = config.inter_op is None or inter_now == config.inter_op
    if not intra_ok and intra_reason is None:
        intra_reason = f"asked for {config.intra_op} intra-op threads, torch reports {intra_now}"
    if not inter_ok and inter_reason is None:
        inter_reason = f"asked for {config.inter_op} inter-op threads, torch reports {inter_now}"
    return ThreadRecord(
        requested=config,
        intra_op_before=intra_before,
        inter_op_before=inter_before,
        intra_op=intra_now,
        inter_op=inter_now,
        intra_op_applied=intra_ok,
        inter_op_applied=inter_ok,
        intra_op_reason=intra_reason,
        inter_op_reason=inter_reason,
        env=read_thread_env(tuple(config.env)),
    )


def usable_cores() -> int | None:
    """The CPUs this process may run on (its affinity mask; the CPU count where there is none)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


def read_adapter_threads(
    process: Literal["worker", "harness"], applied_intra_op: int | None
) -> AdapterThreads:
    """torch's thread counts in this process as they are now (call it once the model is built); torch is
    not imported here: a model that does not use it is recorded as such."""
    torch = sys.modules.get("torch")
    if torch is None:
        return AdapterThreads(process=process, torch_imported=False, cores=usable_cores())
    return AdapterThreads(
        process=process,
        torch_imported=True,
        intra_op=int(torch.get_num_threads()),
        inter_op=int(torch.get_num_interop_threads()),
        applied_intra_op=applied_intra_op,
        cores=usable_cores(),
    )


def oversubscription(intra_op: int, cores: int | None, fed_by_parent: bool) -> str | None:
    """The warning for a process whose threads that run at once exceed its cores, else None.

    At once: torch's ``intra_op`` threads of one ``predict()``, plus, for a sealed worker, the harness's
    thread that feeds it frames and takes its answers (it runs between frames, while torch's OpenMP workers
    still spin). One thread alone never oversubscribes: the rule fires only when ``intra_op > 1``.
    """
    busy = intra_op + (1 if fed_by_parent else 0)
    if intra_op <= 1 or cores is None or busy <= cores:
        return None
    feeder = " plus the harness's thread that feeds it frames" if fed_by_parent else ""
    return (
        f"{intra_op} torch intra-op threads in the adapter's process{feeder} on {cores} usable core"
        f"{'s' if cores != 1 else ''}: the threads preempt each other and the latency tail measures the "
        "scheduler, not the model (threads.intra_op = 1, the default, measures batch 1)"
    )


def settle(
    record: ThreadRecord, config: ThreadConfig, seen: AdapterThreads | None, fed_by_parent: bool
) -> ThreadRecord:
    """``record`` with what the adapter's process ``seen`` once the model was built: who set the count in
    force (:data:`SetBy`) and the :func:`oversubscription` warning. ``seen`` None (a worker that does not
    report it): the record as it is. ``config.model_fields_set`` tells a configured count from the
    default."""
    if seen is None:
        return record
    update: dict[str, Any] = {"adapter_process": seen, "set_by": None, "warning": None}
    if seen.torch_imported and seen.intra_op is not None:
        if seen.applied_intra_op is not None and seen.intra_op != seen.applied_intra_op:
            update["set_by"] = "adapter"
        elif config.intra_op is None:
            update["set_by"] = "torch default"
        elif "intra_op" in config.model_fields_set:
            update["set_by"] = "configuration"
        else:
            update["set_by"] = "streambench default"
        update["warning"] = oversubscription(seen.intra_op, seen.cores, fed_by_parent)
    return record.model_copy(update=update)


def thread_summary(record: ThreadRecord) -> str:
    """One line: the thread setting that governed the model, who chose it, and the cores (for ``show``,
    the run's summary and the report)."""
    seen = record.adapter_process
    if seen is None:
        return f"torch intra-op threads {record.intra_op}, inter-op {record.inter_op} (the harness's process)"
    cores = f"{seen.cores} usable cores" if seen.cores is not None else "usable cores unknown"
    if not seen.torch_imported:
        asked = record.requested.intra_op if record.requested.intra_op is not None else "torch's default"
        return (
            f"the adapter's process did not import torch: its thread setting ({asked}) did not apply "
            f"(a model's own runtime, e.g. ONNX Runtime, sizes its pool from its options) · {cores}"
        )
    return f"torch intra-op threads {seen.intra_op} ({record.set_by}), inter-op {seen.inter_op} · {cores}"
