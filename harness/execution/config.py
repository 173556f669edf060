"""What one run is: :class:`RunConfig` (adapter, data, protocol, engine, instruments, isolation) and the
limits of an isolated run. Every room that runs or records a run imports this module; it imports none of
them (DESIGN.md "Layout": the run configuration sits below the runner and the isolation worker alike).
"""

from __future__ import annotations

import os
import re
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from streambench.harness.datasets.catalog import DataConfig
from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution.engine import EngineConfig
from streambench.harness.execution.executor import OnError
from streambench.harness.instruments.power import PowerConfig
from streambench.harness.instruments.threads import ThreadConfig
from streambench.harness.io.store_layout import reserved_reason
from streambench.protocols import online

__all__ = ["IsolationConfig", "RunConfig", "check_run_id", "run_id_for", "user_field_path"]

_DATA_KINDS = frozenset({"synthetic", "audio_files", "ave", "llp", "synthetic_spoof"})


class IsolationConfig(BaseModel):
    """Limits of an isolated run (``--isolate``)."""

    model_config = ConfigDict(extra="forbid")

    frame_timeout_s: float = Field(30.0, gt=0, description="longest one predict() or reset_state() may take")
    stream_timeout_s: float = Field(600.0, gt=0, description="longest one stream may take, decoding included")
    start_timeout_s: float = Field(
        300.0, gt=0, description="longest starting a worker may take: imports, adapter, warm-up"
    )
    memory_limit_mb: int | None = Field(
        None, gt=0, description="address space the adapter may add once built (RLIMIT_AS); None: no limit"
    )
    sealed: bool = Field(
        True,
        description="the worker holds no data and is told only what the model needs: the parent sends each "
        "frame after the previous prediction returned and times it on its own clock (the future, the labels "
        "and the clock that decides latency are out of the adapter's reach; costs a pipe round trip per "
        "frame). False: the worker builds the data set itself (--no-sealed)",
    )
    sandbox: Literal["auto", "require", "off"] = Field(
        "auto",
        description="the sealed worker's OS sandbox (Landlock): it can read only the Python installation, "
        "the adapter's code and model files, and write a private throw-away directory (not the data, the "
        "results store or other processes' /proc). auto: sandboxed where Landlock is available, else run "
        "and mark the result unsandboxed; require: refuse to run without it; off: never (marked so)",
    )


class RunConfig(BaseModel):
    """One run: which adapter, on which data, under which protocol and engine settings."""

    model_config = ConfigDict(extra="forbid")

    adapter: str = Field("reference", description="registry name or importable module:Class")
    adapter_options: dict[str, Any] = Field(
        default_factory=dict, description="the adapter's options, validated by its own Options model"
    )
    data: DataConfig = Field(
        default_factory=SyntheticConfig, description="the data set; `kind` selects it (default synthetic)"
    )
    protocol: online.OnlineConfig = Field(default_factory=online.OnlineConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    threads: ThreadConfig = Field(default_factory=ThreadConfig)
    power: PowerConfig = Field(default_factory=PowerConfig)
    torch_seed: int = Field(
        0, description="torch.manual_seed of the process that builds and runs the adapter"
    )
    output_dir: Path = Field(Path("results"), description="where run directories go")
    run_id: str | None = Field(None, description="name of the run directory (default: generated)")
    baseline: Path | None = Field(
        None, description="a baseline run directory for speed-up and FLOPs normalisation"
    )
    isolate: bool = Field(
        True,
        description="run the adapter in a worker process (sealed by default; timeouts, crash recovery); "
        "False: in this process (--in-process), for debugging: the model can reach the harness's clock, "
        "data and labels, and the result says so",
    )
    isolation: IsolationConfig = Field(default_factory=IsolationConfig)
    on_error: OnError = Field(
        "continue",
        description="on an adapter failure: skip the rest of that stream and go on, or end the run",
    )

    @field_validator("run_id")
    @classmethod
    def _run_id_is_a_name(cls, value: str | None) -> str | None:
        return None if value is None else check_run_id(value)


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is a name (one directory inside the output directory), else ValueError saying
    why: a run id with a separator, ``..`` or an absolute path would write outside the store;
    one the store uses itself (``index.sqlite`` and its sidecars, hidden names) or starting with ``-``
    would collide with the store or read as an option
    (:func:`streambench.harness.io.store_layout.reserved_reason`)."""
    if not run_id or not run_id.strip():
        raise ValueError("a run id must not be empty")
    if run_id in (".", ".."):
        raise ValueError(f"run id {run_id!r} is not a name: it would write outside the output directory")
    if "/" in run_id or "\\" in run_id or os.sep in run_id or (os.altsep and os.altsep in run_id):
        raise ValueError(f"run id {run_id!r} contains a path separator: a run id is a directory name")
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in run_id):
        raise ValueError(f"run id {run_id!r} contains a control character")
    if Path(run_id).is_absolute() or Path(run_id).name != run_id:
        raise ValueError(f"run id {run_id!r} is not a plain name")
    reserved = reserved_reason(run_id)
    if reserved is not None:  # the index, its sidecars, hidden names; '-x'
        raise ValueError(f"run id {reserved}; choose another")
    return run_id


def run_id_for(adapter: str, protocol: str = "") -> str:
    """A new run id: UTC time, the adapter's name, the protocol (if not online), a random suffix."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", adapter.rsplit(":", 1)[-1]).strip("-").lower() or "adapter"
    middle = f"{slug}-{protocol}" if protocol else slug
    return f"{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{middle}-{secrets.token_hex(3)}"


def user_field_path(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """The field as the user writes it: ``data.num_streams``, not pydantic's ``data.synthetic.num_streams``
    (the tag of the data set union)."""
    if len(loc) > 1 and loc[0] == "data" and loc[1] in _DATA_KINDS:
        return (loc[0], *loc[2:])
    return loc
