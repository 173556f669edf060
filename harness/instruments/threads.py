"""Thread settings of a run: set them before the model is built, record what is in force.

Seed 004 §6.2.2 "计时与稳定性建议" asks to fix random seeds and thread binding ("固定随机种子与线程绑定",
e.g. ``torch.set_num_threads(1)``), and its environment lock list ("环境锁定清单") asks for the thread /
OMP environment variables (e.g. ``OMP_NUM_THREADS=1``); §6.2.3 "硬件与环境" asks for the concurrency
setting (single- or multi-threaded). :func:`apply` sets what a :class:`ThreadConfig` asks for and returns
a :class:`ThreadRecord` read back from torch, so the result states what was really in force.

The default :class:`ThreadConfig` changes nothing: a deployment normally runs with torch's own defaults
(intra-op threads = physical cores, inter-op threads = torch's pool size, whatever the environment
sets), so that is what an unconfigured run measures. Pinning is one field away (``intra_op=1`` is the
seed's example) and, pinned or not, the record and the environment fingerprint carry the values, so two
runs with different thread settings are never compared silently.
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["THREAD_ENV_VARS", "ThreadConfig", "ThreadRecord", "apply", "read_thread_env"]

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
    """What to set. ``None`` leaves torch's value as it is (the default: a deployment's setting).

    ``env`` is written to ``os.environ``. Environment variables only affect libraries that read them when
    they initialise *afterwards*: torch's intra-op pool, OpenMP and MKL read theirs when torch is imported
    or first runs parallel work, so setting ``OMP_NUM_THREADS`` here does not resize a pool that already
    exists — use ``intra_op`` for torch, and set the variables in the shell (or before importing torch)
    when they must govern torch itself. They still reach libraries loaded later and child processes.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    intra_op: int | None = Field(default=None, ge=1, description="torch.set_num_threads; None = leave")
    inter_op: int | None = Field(
        default=None, ge=1, description="torch.set_num_interop_threads; None = leave"
    )
    env: dict[str, str] = Field(default_factory=dict, description="environment variables to set")


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
