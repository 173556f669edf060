"""The environment manifest's entry, :class:`Item`, and the items read from the host without torch.

DESIGN.md "Instruments": the manifest records "every item of seed 004's environment lock list that can be
read ..., each ``null`` with a reason when it cannot be read". An :class:`Item` is that entry: a value, or
``None`` and the reason — never a guess (:func:`value_item`, :func:`missing_item`; :func:`guarded` turns a
reader's exception into the reason, so a manifest never fails a run). The readers here take the host's
side of the list from files and tools, each an :class:`Item`:

- the CPU (:func:`read_cpu_model`, ``/proc/cpuinfo``), its frequency governor (:func:`read_governor`) and
  the kernel clock source behind ``perf_counter`` (:func:`read_clocksource`), under ``/sys``; the OS
  (:func:`read_os`, ``/etc/os-release``) — each under a ``root`` tests replace with a fake one;
- the git state of a checkout (:func:`git_state`), of the adapter's module (:func:`read_adapter_git`);
- seed 004 §6.2.2 "环境锁定清单"'s data decoding library (:func:`read_decoder`: ffmpeg's version line).

Every tool runs with a timeout of 5 s. :mod:`streambench.harness.instruments.manifest` collects these with
the torch, GPU and package items into the manifest.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, JsonValue, model_validator

__all__ = [
    "Item",
    "git_state",
    "guarded",
    "missing_item",
    "read_adapter_git",
    "read_clocksource",
    "read_cpu_model",
    "read_decoder",
    "read_governor",
    "read_os",
    "value_item",
]

_TIMEOUT_S = 5.0


class Item(BaseModel):
    """One manifest entry: ``value``, or ``value=None`` and the ``reason`` it could not be read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: str | int | float | bool | dict[str, JsonValue] | None = None
    reason: str | None = None

    @model_validator(mode="after")
    def _reason_when_missing(self) -> Item:
        if self.value is None and not self.reason:
            raise ValueError("an item without a value must say why (reason)")
        return self


def value_item(value: str | int | float | bool | dict[str, JsonValue]) -> Item:
    """An item that was read."""
    return Item(value=value)


def missing_item(reason: str) -> Item:
    """An item that could not be read, and why."""
    return Item(value=None, reason=reason)


def guarded(read: Callable[[], Item], what: str) -> Item:
    """``read()``, or the item missing with the exception that reading ``what`` raised."""
    try:
        return read()
    except Exception as exc:  # a manifest never fails a run: an unreadable item is None with the reason
        return missing_item(f"reading {what} failed: {type(exc).__name__}: {exc}")


def _read_file(path: Path) -> Item:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return missing_item(f"{path} does not exist")
    except OSError as exc:
        return missing_item(f"{path}: {exc.strerror or exc}")
    return value_item(text) if text else missing_item(f"{path} is empty")


def _run(args: list[str]) -> tuple[int, str, str]:
    env = {**os.environ, "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}
    done = subprocess.run(args, capture_output=True, text=True, timeout=_TIMEOUT_S, env=env, check=False)
    return done.returncode, done.stdout.strip(), done.stderr.strip()


def read_cpu_model(root: Path = Path("/")) -> Item:
    """``model name`` (x86) or its ARM / RISC-V equivalent from ``<root>/proc/cpuinfo``."""
    cpuinfo = _read_file(root / "proc" / "cpuinfo")
    if isinstance(cpuinfo.value, str):
        for key in ("model name", "Hardware", "Processor", "cpu model", "uarch"):
            match = re.search(rf"^{key}\s*:\s*(\S.*)$", cpuinfo.value, re.MULTILINE)
            if match:
                return value_item(match.group(1).strip())
    processor = platform.processor()
    return (
        value_item(processor) if processor else missing_item(f"no CPU model in {root / 'proc' / 'cpuinfo'}")
    )


def read_governor(root: Path = Path("/")) -> Item:
    """CPU frequency governor of cpu0 (``performance``, ``powersave``, ...)."""
    return _read_file(root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")


def read_clocksource(root: Path = Path("/")) -> Item:
    """The kernel clock source behind ``perf_counter`` (``tsc``, ``hpet``, ``kvm-clock``, ...)."""
    return _read_file(root / "sys/devices/system/clocksource/clocksource0/current_clocksource")


def read_os(root: Path = Path("/")) -> Item:
    """The OS's ``PRETTY_NAME`` from ``<root>/etc/os-release``, else :func:`platform.platform`."""
    release = _read_file(root / "etc" / "os-release")
    if isinstance(release.value, str):
        match = re.search(r'^PRETTY_NAME="?([^"\n]*)"?$', release.value, re.MULTILINE)
        if match:
            return value_item(match.group(1))
    return value_item(platform.platform())


def git_state(directory: Path) -> Item:
    """``{"commit", "dirty"}`` of the checkout holding ``directory`` (dirty: tracked or untracked changes)."""
    if shutil.which("git") is None:
        return missing_item("git not found on PATH")
    git = ["git", "-C", str(directory), "--no-optional-locks"]
    try:
        code, commit, err = _run([*git, "rev-parse", "HEAD"])
        if code != 0:
            return missing_item(
                f"{directory} is not in a git checkout ({err.splitlines()[0] if err else code})"
            )
        code, status, _ = _run([*git, "status", "--porcelain"])
    except subprocess.TimeoutExpired:
        return missing_item(f"git timed out after {_TIMEOUT_S:g} s in {directory}")
    return value_item({"commit": commit, "dirty": bool(status) if code == 0 else None})


def read_adapter_git(adapter_module: str | None) -> Item:
    """:func:`git_state` of the checkout holding the adapter's module (``module`` or ``module:Class``)."""
    if not adapter_module:
        return missing_item("no adapter module given")
    name = adapter_module.split(":", 1)[0]
    origin = getattr(sys.modules.get(name), "__file__", None)
    if origin is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError) as exc:
            return missing_item(f"module {name!r} cannot be located: {exc}")
        origin = spec.origin if spec is not None else None
    if not origin or not Path(origin).is_file():
        return missing_item(f"module {name!r} has no file on disk")
    return git_state(Path(origin).resolve().parent)


def read_decoder() -> Item:
    """The data decoding library: ffmpeg's path and first ``-version`` line, where ffmpeg is on PATH."""
    path = shutil.which("ffmpeg")
    if path is None:
        return missing_item("ffmpeg not found on PATH")
    try:
        code, out, err = _run([path, "-hide_banner", "-version"])
    except subprocess.TimeoutExpired:
        return missing_item(f"{path} -version timed out")
    line = out.splitlines()[0] if code == 0 and out else ""
    return (
        value_item({"name": "ffmpeg", "path": path, "version": line})
        if line
        else missing_item(f"{path}: {err}")
    )
