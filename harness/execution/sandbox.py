"""An OS-level sandbox for the adapter's worker process.

DESIGN.md, "Causality": the trust boundary is the adapter's process, and what it can read from disk or
/proc is untrusted. The parent computes a :class:`SandboxPolicy` with :func:`policy_for` (a read allow-list
and a private, throw-away writable directory); the worker calls :func:`enter_sandbox` before any thread
starts and before the adapter is imported or built. Then the data set's files, the results store and
other processes' /proc entries (``/proc/<parent pid>/cmdline`` says which protocol runs) are unreadable.

Mechanism: Landlock (https://docs.kernel.org/userspace-api/landlock.html), through the ``landlockpy``
binding. It is unprivileged and irreversible, and binds the calling thread (all threads from ABI 8)
and every child it starts later. In the kernel's convention every right the ruleset *handles* is denied
unless a rule grants it on a file hierarchy; rules only add access, so a denied path inside an allowed
hierarchy cannot be carved out afterwards. Hence
:func:`policy_for` never allows a hierarchy that contains a denied path: it allows that hierarchy's
children one by one instead, descending only into those that lead to a denied path (symbolic links among
them are skipped: their targets are readable only where another rule allows them). From ABI 6 the
domain is also *scoped*: the worker can neither signal nor connect to an abstract UNIX socket of a
process outside it. The network is not restricted.

Where Landlock is unavailable (not Linux, an old kernel, Landlock not enabled, the binding missing),
``mode="auto"`` runs without it and says so (:class:`SandboxRecord` ``status="unsandboxed"`` with the
reason), ``mode="require"`` refuses (:class:`SandboxUnavailableError`), ``mode="off"`` never tries.

Not covered: ``stat()`` of a denied path still works (sizes, times: Landlock does not handle metadata);
a denied file hard-linked into an allowed hierarchy is readable through the link; /dev/shm is shared
(multiprocessing needs it); what the parent puts in the worker's environment is readable. A top-level
module imported after the sandbox from a sys.path entry that had to be split (the checkout, which holds
``results/``) is found through the import cache filled just before the sandbox; after
``importlib.invalidate_caches()`` it is not (the entry cannot be listed).
"""

from __future__ import annotations

import contextlib
import glob
import importlib.machinery
import importlib.util
import os
import pkgutil
import shutil
import site
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from streambench.harness.execution.no_processes import refuse_new_processes

__all__ = [
    "SandboxMode",
    "SandboxPolicy",
    "SandboxRecord",
    "SandboxUnavailableError",
    "adapter_code",
    "discard",
    "enter_sandbox",
    "landlock_abi",
    "policy_for",
    "sandbox_policy",
]

SandboxMode = Literal["auto", "require", "off"]

_SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sys", "/etc/alternatives")
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ld.so.preload", "localtime", "timezone",
        "nsswitch.conf", "passwd", "group", "os-release", "mime.types")  # fmt: skip
_PROC = ("cpuinfo", "meminfo", "stat", "loadavg", "uptime", "version", "filesystems", "sys", "driver/nvidia")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/shm")
_REDIRECTED = ("TMPDIR", "TMP", "TEMP", "HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
               "XDG_STATE_HOME", "MPLCONFIGDIR")  # fmt: skip


class SandboxUnavailableError(RuntimeError):
    """``mode="require"`` and the sandbox cannot be entered: the run refuses to start."""


class SandboxPolicy(BaseModel):
    """What the worker may touch, computed in the parent by :func:`policy_for` (plain strings: it travels
    to the worker as JSON). It names no denied path: the worker is told only what the model needs. The
    worker adds one rule itself: its own ``/proc/<pid>``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    read_paths: list[str]
    """Hierarchies the worker may read and execute (none of them contains a denied path)."""
    write_dir: str
    """A private throw-away directory (mode 0700), readable and writable; TMPDIR, HOME, XDG_* point at it."""
    device_paths: list[str] = []
    """Device files (and /dev/shm, for multiprocessing's semaphores) the worker may read, write, ioctl."""
    listed_paths: list[str] = []
    """Directories whose listing the worker's import system caches before it is confined: where the
    adapter's code is found (harness/execution/worker_paths.py). One that holds a denied path (a checkout
    holding ``results/``) is carved in ``read_paths`` and cannot be listed once confined."""


class SandboxRecord(BaseModel):
    """What the worker got; the parent records it in result.json."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["sandboxed", "unsandboxed"]
    mechanism: str | None = None
    """e.g. ``"landlock ABI 7, scoped (signals, abstract unix sockets)"``; None when unsandboxed."""
    reason: str | None = None
    """Why it is unsandboxed (None when sandboxed)."""
    processes: str | None = None
    """Whether the worker may start processes: ``new processes refused (seccomp)``, or allowed and why
    (harness/execution/no_processes.py); None in records from before the check, or with the sandbox off."""


def landlock_abi() -> tuple[int, str | None]:
    """The running kernel's Landlock ABI version and ``None``, or ``0`` and why Landlock is unavailable."""
    if not sys.platform.startswith("linux"):
        return 0, f"Landlock is Linux-only (this platform is {sys.platform})"
    try:
        import landlockpy
    except ImportError:
        return 0, "the landlockpy package is not installed (pip install landlockpy)"
    try:
        abi = int(landlockpy.abi_version())
    except OSError as exc:
        return 0, f"the Landlock ABI query failed: {exc}"
    if abi < 1:
        return 0, "the kernel has no Landlock (older than 5.13, or Landlock not in its lsm= list)"
    return abi, None


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _carve(root: str, denied: Sequence[str]) -> list[str]:
    """``root`` if it contains no denied path, else its children carved alike (symlinks skipped)."""
    inner = [d for d in denied if _within(d, root)]
    if not inner:
        return [root]
    if root in inner or not os.path.isdir(root) or os.path.islink(root):
        return []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    return [kept for e in entries if not e.is_symlink() for kept in _carve(e.path, inner)]


def _python_roots() -> list[str]:
    """The interpreter, its standard library and site-packages (venv and base installation)."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    paths += [sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    return [*paths, os.path.realpath(sys.executable), *site.getsitepackages()]


def _package_dirs(packages: Iterable[str]) -> list[str]:
    """Where these top-level packages are imported from (an editable install maps them with no sys.path
    entry)."""
    found: list[str] = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        if spec is not None:
            found += list(spec.submodule_search_locations or ([spec.origin] if spec.origin else []))
    return found


# streambench and its three floors: installed under one name, each floor mapped from its own directory
# (pyproject.toml, [tool.setuptools.package-dir]), so each is found on its own
_OWN_PACKAGES = ("streambench", "streambench.adapters", "streambench.harness", "streambench.protocols")


def policy_for(
    denied: Sequence[Path | str],
    extra_read: Sequence[Path | str] = (),
    *,
    write_dir: str | None = None,
    packages: Sequence[str] = _OWN_PACKAGES,
    adapter_paths: Sequence[str] = (),
) -> SandboxPolicy:
    """The worker's policy, computed in the parent. ``denied``: the data set's files and directories, the
    results store, any output directory (they need not exist yet). ``extra_read``: the adapter's code and
    model files. ``adapter_paths``: where the adapter's imports are found (readable but for the denied
    paths inside them, and listed before confinement). ``write_dir``: a fresh private directory is made
    when None (remove it with :func:`discard`). Raises ValueError when an allowed path lies inside a
    denied one (a sys.path entry there is dropped instead)."""
    refused = sorted({os.path.realpath(os.fspath(p)) for p in denied})
    strict = _python_roots() + _package_dirs(packages) + [os.fspath(p) for p in extra_read]
    loose = [entry or os.getcwd() for entry in [*adapter_paths, *sys.path]] + list(_SYSTEM)
    loose += [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
    loose += [f"/etc/{name}" for name in _ETC] + [f"/proc/{name}" for name in _PROC]
    roots: dict[str, bool] = {}
    for path, must in [(p, True) for p in strict] + [(p, False) for p in loose]:
        real = os.path.realpath(path)
        if os.path.exists(real):
            roots[real] = roots.get(real, False) or must
    allowed: set[str] = set()
    for root, must in roots.items():
        inside = [d for d in refused if _within(root, d)]
        if inside and must:
            raise ValueError(f"sandbox: {root} must be readable but lies inside the denied {inside[0]}")
        if not inside:
            allowed.update(_carve(root, refused))
    read_paths = sorted(p for p in allowed if not any(_within(p, q) and p != q for q in allowed))
    devices = [d for d in _DEVICES + tuple(sorted(glob.glob("/dev/nvidia*"))) if os.path.exists(d)]
    made = write_dir is None
    writable = os.path.realpath(write_dir or tempfile.mkdtemp(prefix="streambench-sandbox-"))  # 0700
    if any(_within(writable, d) or _within(d, writable) for d in refused):
        if made:
            os.rmdir(writable)
        raise ValueError(f"sandbox: the writable {writable} overlaps a denied path")
    listed = [p for p in dict.fromkeys(adapter_paths) if os.path.isdir(p)]
    return SandboxPolicy(read_paths=read_paths, write_dir=writable, device_paths=devices, listed_paths=listed)


def discard(policy: SandboxPolicy) -> None:
    """Parent side, at close: remove the worker's writable directory and all it wrote."""
    shutil.rmtree(policy.write_dir, ignore_errors=True)


def _thread_count() -> int:
    try:
        return len(os.listdir(f"/proc/{os.getpid()}/task"))  # native threads too (OpenMP, BLAS)
    except OSError:
        return threading.active_count()


def _prefill_import_caches(entries: Iterable[str]) -> None:
    """Fill each entry's import cache now: a split entry cannot be listed inside the sandbox."""
    for entry in entries:
        finder = pkgutil.get_importer(entry or os.getcwd())
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is not None:
            with contextlib.suppress(Exception):  # a third-party path hook's cache is its own business
                find_spec("_streambench_sandbox_prefill_")


def _restrict(policy: SandboxPolicy, abi: int, all_threads: bool) -> str:
    """Build the Landlock ruleset and enforce it on this process; the mechanism's description."""
    import landlockpy
    from landlockpy import AccessFS, AccessNet, RestrictFlag, Scope

    every = landlockpy.fs_for_abi(abi)
    read = AccessFS.READ_FILE | AccessFS.READ_DIR | AccessFS.EXECUTE
    on_files = AccessFS.EXECUTE | AccessFS.WRITE_FILE | AccessFS.READ_FILE | AccessFS.TRUNCATE
    on_files |= AccessFS.IOCTL_DEV
    device = every & ~(AccessFS.MAKE_CHAR | AccessFS.MAKE_BLOCK | AccessFS.EXECUTE)
    rules = [(p, read) for p in policy.read_paths] + [(p, device) for p in policy.device_paths]
    rules += [(f"/proc/{os.getpid()}", AccessFS.READ_FILE | AccessFS.READ_DIR), (policy.write_dir, every)]
    scoped = Scope.SIGNAL | Scope.ABSTRACT_UNIX_SOCKET
    with landlockpy.Ruleset(handled_fs=every, handled_net=AccessNet.NONE, scoped=scoped) as ruleset:
        for path, access in rules:
            try:
                is_dir = os.path.isdir(path)
                ruleset.allow_path(path, access if is_dir else access & on_files)
            except (FileNotFoundError, NotADirectoryError):
                continue  # gone since the parent looked: nothing to allow
        ruleset.restrict(RestrictFlag.TSYNC if all_threads else RestrictFlag.NONE)
        scopes = ", scoped (signals, abstract unix sockets)" if ruleset.scoped else ""
    return f"landlock ABI {abi}{scopes}{', all threads' if all_threads else ''}"


def enter_sandbox(policy: SandboxPolicy, mode: SandboxMode = "auto") -> SandboxRecord:
    """Worker side: confine this process to ``policy``, for good. Call it before the adapter is imported
    or built, and before any thread starts: below ABI 8 a thread started earlier would stay unconfined,
    so this raises RuntimeError then, whatever the mode. Once confined, it points TMPDIR, HOME and XDG_*
    at the writable directory and drops ``sys.argv[1:]`` (a ``multiprocessing`` spawn child inherits the
    parent's command line, which names the protocol).

    ``mode``: ``"auto"`` sandboxes where Landlock is available and otherwise returns ``unsandboxed`` with
    the reason; ``"require"`` raises :class:`SandboxUnavailableError` instead; ``"off"`` does nothing.
    Unless off, the worker may start no process once confined (harness/execution/no_processes.py)."""
    if mode == "off":
        return SandboxRecord(status="unsandboxed", reason="sandbox off (--sandbox off)")
    abi, why = landlock_abi()
    if abi < 1:
        if mode == "require":
            raise SandboxUnavailableError(
                f"--sandbox require: cannot sandbox the adapter's process: {why}. "
                "Use --sandbox auto to run anyway with the result marked unsandboxed."
            )
        _, processes = refuse_new_processes()
        return SandboxRecord(status="unsandboxed", reason=why, processes=processes)
    threads = _thread_count()
    if threads > 1 and abi < 8:
        raise RuntimeError(
            f"enter_sandbox: this process already runs {threads} threads and Landlock ABI {abi} confines "
            "only the calling one (ABI 8 confines all); enter the sandbox before starting any thread"
        )
    _prefill_import_caches(dict.fromkeys([*sys.path, *policy.listed_paths]))
    try:
        mechanism = _restrict(policy, abi, all_threads=threads > 1)
    except OSError as exc:
        if mode == "require":
            raise SandboxUnavailableError(f"--sandbox require: Landlock failed: {exc}") from exc
        return SandboxRecord(status="unsandboxed", reason=f"Landlock ABI {abi} failed: {exc}")
    for name in _REDIRECTED:
        os.environ[name] = policy.write_dir
    tempfile.tempdir = policy.write_dir
    del sys.argv[1:]
    _, processes = refuse_new_processes()
    return SandboxRecord(status="sandboxed", mechanism=mechanism, processes=processes)


def sandbox_policy(config: Any, adapter_paths: Sequence[str] | None = None) -> SandboxPolicy:
    """The sealed worker's policy for a run (``config``: a
    :class:`streambench.harness.execution.config.RunConfig`; ``adapter_paths``: where the worker finds the
    adapter's code, :class:`~streambench.harness.execution.worker_paths.WorkerPaths` ``adapter``, by
    default the working directory's and this process's path). Denied: every path the data set's
    configuration names (its roots, label and manifest files), the results store (``output_dir``, and
    the default ``results/`` here too) and a baseline run. Readable besides the defaults: the adapter's
    own module (:func:`adapter_code`), a ``factory`` option's module (torch-module's model code, found the
    same way), what lies in ``adapter_paths`` and every adapter option that names an existing file or
    directory (weights, TorchScript / ONNX files)."""
    # the run's store, and the default one wherever this run writes (earlier runs' recordings and labels)
    denied = [config.output_dir, Path("results"), *_paths_in(config.data.model_dump(mode="json"))]
    if config.baseline is not None:
        denied.append(config.baseline)
    if adapter_paths is None:
        from streambench.harness.execution.worker_paths import worker_paths

        adapter_paths = worker_paths().adapter
    code = adapter_code(config.adapter, adapter_paths)
    factory = config.adapter_options.get("factory")
    if isinstance(factory, str):  # torch-module's factory= names the model's code as module:callable
        code = [*code, *adapter_code(factory, adapter_paths)]
    extra = [*code, *(value for value in _paths_in(config.adapter_options) if os.path.exists(value))]
    return policy_for(denied=denied, extra_read=extra, adapter_paths=adapter_paths)


def adapter_code(adapter: str, search: Sequence[str] = ()) -> list[str]:
    """Where the worker will import an adapter's top-level module from, found without running any of it
    (no package ``__init__`` is executed here): the paths to read. Searched as the worker searches:
    ``search`` (the worker's adapter directories) first, then this process's ``sys.path``. A registry
    name is its ``module:Class``."""
    from streambench.adapters.registry import known

    target = known().get(adapter, adapter)
    if ":" not in target:
        return []
    module = target.partition(":")[0]
    top = module.split(".")[0]
    if not top:
        return []
    if top == "streambench":  # one of our floors: its own directory (the floors are mapped one by one)
        floor = ".".join(module.split(".")[:2])
        return [os.path.realpath(p) for p in _package_dirs([floor])]
    here = os.getcwd()
    with contextlib.suppress(Exception):  # a broken path hook: the worker's import will say so
        entries = [entry or here for entry in [*search, *sys.path]]
        spec = importlib.machinery.PathFinder.find_spec(top, entries)
        if spec is not None:
            found = list(spec.submodule_search_locations or ([spec.origin] if spec.origin else []))
            return [p for p in found if os.path.exists(p)]
    return []


def _paths_in(tree: Any) -> list[str]:
    """Every string in a configuration tree that names an existing path (absolute, or from here)."""
    if isinstance(tree, dict):
        return [p for value in tree.values() for p in _paths_in(value)]
    if isinstance(tree, (list, tuple)):
        return [p for value in tree for p in _paths_in(value)]
    if isinstance(tree, (str, Path)) and str(tree) and os.path.exists(tree):
        return [os.path.abspath(tree)]
    return []
