"""The adapter worker's OS-level sandbox (harness/execution/sandbox.py; issue 24, item 3).

Each sandboxed check runs in a fresh child process (``python -c``) that enters the sandbox with a policy
this process computed by ``policy_for`` (as the harness parent would) and then tries what an untrusted
model would: read the data set, the results store, the parent's /proc entries, write outside its private
directory. The control run (Landlock reported unavailable, ``mode="auto"``) reads the same files, so a
denial is the sandbox's doing and each test can fail.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Prediction
from streambench.adapters.offenders.file_reader import FileReaderAdapter, FileReaderOptions
from streambench.harness.execution.sandbox import (
    SandboxPolicy,
    adapter_code,
    discard,
    enter_sandbox,
    landlock_abi,
    policy_for,
)

ROOT = Path(__file__).resolve().parents[3]
ABI, WHY = landlock_abi()
needs_landlock = pytest.mark.skipif(ABI < 1, reason=f"Landlock is unavailable on this machine: {WHY}")

CHILD = r"""
import json, os, sys, tempfile, threading
from streambench.harness.execution import sandbox
args = json.loads(sys.stdin.read())
try:
    import landlockpy  # imported here so that no import before the sandbox lists the entry below by chance
except ImportError:
    pass
sys.path.append(args["sys_path"])  # found through the import cache the sandbox fills before it closes
tempfile.gettempdir()  # cached before the sandbox, as it may be in the worker
if args["unavailable"]:  # simulate a kernel without Landlock
    sandbox.landlock_abi = lambda: (0, "simulated: no Landlock in this kernel")
if args["thread"]:
    started = threading.Event()
    threading.Thread(target=lambda: (started.set(), threading.Event().wait(30)), daemon=True).start()
    started.wait()
def cheat(path):  # the planted offender, built inside the sandbox as the worker would build it
    from streambench.adapters.contract import Frame, Prediction
    from streambench.adapters.offenders.file_reader import FileReaderAdapter, FileReaderOptions
    model = FileReaderAdapter(FileReaderOptions(path=path))
    return [model.read_outcome, model.predict(Frame(index=0, t=0.0, inputs={})).scores.tolist()]
out = {}
try:
    out["record"] = sandbox.enter_sandbox(sandbox.SandboxPolicy(**args["policy"]), args["mode"]).model_dump()
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(out))
    sys.exit(0)
results = {}
for name, expr in args["probes"].items():
    try:
        value = eval(expr)
        results[name] = ["ok", value if isinstance(value, (str, int, bool, list)) else repr(value)[:80]]
    except Exception as exc:
        results[name] = [type(exc).__name__, str(exc)]
out["probes"] = results
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A data set and a checkout on sys.path whose ``results/`` store and one asset file are denied."""
    base = tmp_path_factory.mktemp("sandbox")
    paths = {
        "data": base / "data",
        "checkout": base / "checkout",
        "store": base / "checkout" / "results",
        "assets": base / "checkout" / "pkg" / "assets",
        "outside": base / "outside",
    }
    for path in paths.values():
        path.mkdir(parents=True)
    (paths["data"] / "labels.csv").write_text("stream,frame,label\ns0,0,1\n")
    (paths["store"] / "run-1").mkdir()
    (paths["store"] / "run-1" / "result.json").write_text('{"protocol": "causality"}')
    (paths["assets"] / "labels.csv").write_text("secret labels")
    (paths["assets"] / "weights.txt").write_text("model weights")
    (paths["checkout"] / "sibling_module.py").write_text("VALUE = 42\n")
    return paths


def _policy(world: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> SandboxPolicy:
    monkeypatch.syspath_prepend(str(world["checkout"]))  # the checkout is a sys.path entry, as in a run
    denied = [world["data"], world["store"], world["assets"] / "labels.csv"]
    return policy_for(denied=denied)


def run_child(
    policy: SandboxPolicy,
    sys_path: Path,
    probes: dict[str, str],
    mode: str = "require",
    unavailable: bool = False,
    thread: bool = False,
) -> dict[str, Any]:
    args = {
        "policy": policy.model_dump(),
        "mode": mode,
        "unavailable": unavailable,
        "thread": thread,
        "probes": probes,
        "sys_path": str(sys_path),
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "--protocol=causality"],
        input=json.dumps(args),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def probes(world: dict[str, Path]) -> dict[str, str]:
    ppid = os.getpid()  # this test process is the child's parent
    return {
        "data": f"open({str(world['data'] / 'labels.csv')!r}).read()",
        "data_listing": f"os.listdir({str(world['data'])!r})",
        "store": f"open({str(world['store'] / 'run-1' / 'result.json')!r}).read()",
        "store_listing": f"os.listdir({str(world['store'])!r})",
        "nested_denied": f"open({str(world['assets'] / 'labels.csv')!r}).read()",
        "nested_sibling": f"open({str(world['assets'] / 'weights.txt')!r}).read()",
        "sibling": f"open({str(world['checkout'] / 'sibling_module.py')!r}).read()",
        "sibling_import": "__import__('sibling_module').VALUE",
        "parent_cmdline": f"open('/proc/{ppid}/cmdline', 'rb').read()",
        "parent_environ": f"open('/proc/{ppid}/environ', 'rb').read()",
        "init_cmdline": "open('/proc/1/cmdline', 'rb').read()",
        "own_status": "open('/proc/self/status').read().split()[1]",
        "numpy": "int(__import__('numpy').arange(5).sum())",
        "tmpdir": "os.environ['TMPDIR']",
        "write_private": "open(os.path.join(os.environ['TMPDIR'], 'scratch.txt'), 'w').write('ok')",
        "tempfile": "__import__('tempfile').mkstemp()[1]",
        "write_outside": f"open({str(world['outside'] / 'x.txt')!r}, 'w').write('x')",
        "write_checkout": f"open({str(world['checkout'] / 'new.txt')!r}, 'w').write('x')",
        "signal_parent": f"os.kill({ppid}, 0)",
        "argv": "sys.argv[1:]",
        "cheat": f"cheat({str(world['data'] / 'labels.csv')!r})",
    }


@pytest.fixture(scope="module")
def sandboxed(world: dict[str, Path]) -> dict[str, Any]:
    """One sandboxed child that tries everything (``mode="require"``)."""
    if ABI < 1:
        pytest.skip(f"Landlock is unavailable on this machine: {WHY}")
    with pytest.MonkeyPatch.context() as monkeypatch:
        policy = _policy(world, monkeypatch)
    try:
        return run_child(policy, world["checkout"], probes(world)) | {"write_dir": policy.write_dir}
    finally:
        discard(policy)


@pytest.fixture(scope="module")
def control(world: dict[str, Path]) -> dict[str, Any]:
    """The same child where Landlock is reported unavailable and the mode is "auto": it runs unsandboxed."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        policy = _policy(world, monkeypatch)
    try:
        return run_child(policy, world["checkout"], probes(world), mode="auto", unavailable=True)
    finally:
        discard(policy)


def denied(result: dict[str, Any], name: str) -> bool:
    return bool(result["probes"][name][0] == "PermissionError")


@pytest.mark.processes
@needs_landlock
def test_the_child_is_sandboxed_by_landlock(sandboxed: dict[str, Any]) -> None:
    record = sandboxed["record"]
    assert record["status"] == "sandboxed" and record["reason"] is None
    assert record["mechanism"].startswith(f"landlock ABI {ABI}")


@pytest.mark.processes
@needs_landlock
def test_a_model_cannot_read_the_data_set(sandboxed: dict[str, Any], control: dict[str, Any]) -> None:
    assert denied(sandboxed, "data") and denied(sandboxed, "data_listing")
    assert control["probes"]["data"][0] == "ok"  # the file is readable without the sandbox


@pytest.mark.processes
@needs_landlock
def test_a_model_cannot_read_the_results_store(sandboxed: dict[str, Any], control: dict[str, Any]) -> None:
    assert denied(sandboxed, "store") and denied(sandboxed, "store_listing")
    assert control["probes"]["store"] == ["ok", '{"protocol": "causality"}']


@needs_landlock
def test_a_model_cannot_read_other_processes_proc_entries(
    sandboxed: dict[str, Any], control: dict[str, Any]
) -> None:
    for name in ("parent_cmdline", "parent_environ", "init_cmdline"):
        assert denied(sandboxed, name), sandboxed["probes"][name]
    assert control["probes"]["parent_cmdline"][0] == "ok"
    assert sandboxed["probes"]["own_status"][0] == "ok"  # its own /proc/self stays readable


@needs_landlock
def test_a_denied_path_inside_an_allowed_sys_path_entry_stays_denied(
    sandboxed: dict[str, Any], control: dict[str, Any]
) -> None:
    assert denied(sandboxed, "nested_denied")
    assert sandboxed["probes"]["nested_sibling"] == ["ok", "model weights"]
    assert sandboxed["probes"]["sibling"] == ["ok", "VALUE = 42\n"]
    assert sandboxed["probes"]["sibling_import"] == ["ok", 42]  # found through the prefilled import cache
    assert control["probes"]["nested_denied"] == ["ok", "secret labels"]


@needs_landlock
def test_the_python_installation_stays_usable(sandboxed: dict[str, Any]) -> None:
    assert sandboxed["probes"]["numpy"] == ["ok", 10]


@needs_landlock
def test_writes_go_to_the_private_directory_only(sandboxed: dict[str, Any], control: dict[str, Any]) -> None:
    probes = sandboxed["probes"]
    assert probes["tmpdir"] == ["ok", sandboxed["write_dir"]]
    assert probes["write_private"] == ["ok", 2]
    assert probes["tempfile"][0] == "ok" and probes["tempfile"][1].startswith(sandboxed["write_dir"] + "/")
    assert denied(sandboxed, "write_outside") and denied(sandboxed, "write_checkout")
    assert control["probes"]["write_outside"] == ["ok", 1]


@pytest.mark.skipif(ABI < 6, reason=f"signal scoping needs Landlock ABI 6 (this machine: {ABI})")
def test_a_model_cannot_signal_the_parent(sandboxed: dict[str, Any], control: dict[str, Any]) -> None:
    assert denied(sandboxed, "signal_parent")
    assert control["probes"]["signal_parent"] == ["ok", "None"]


@needs_landlock
def test_the_parents_command_line_is_dropped(sandboxed: dict[str, Any], control: dict[str, Any]) -> None:
    assert sandboxed["probes"]["argv"] == ["ok", []]
    assert control["probes"]["argv"] == ["ok", ["--protocol=causality"]]


@needs_landlock
def test_the_planted_file_reader_is_honest_only_inside_the_sandbox(
    sandboxed: dict[str, Any], control: dict[str, Any]
) -> None:
    outcome, scores = sandboxed["probes"]["cheat"][1]
    assert outcome.startswith("could not read") and "PermissionError" in outcome
    assert scores == [0.5, 0.5]  # the honest model on an empty frame
    assert control["probes"]["cheat"][0] == "RuntimeError"
    assert control["probes"]["cheat"][1].startswith("read the data: ")


@pytest.mark.processes
def test_require_refuses_where_landlock_is_unavailable(
    world: dict[str, Path], control: dict[str, Any]
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        policy = _policy(world, monkeypatch)
    try:
        result = run_child(policy, world["checkout"], {}, mode="require", unavailable=True)
    finally:
        discard(policy)
    assert result["error"].startswith("SandboxUnavailableError: --sandbox require: cannot sandbox")
    assert "simulated: no Landlock in this kernel" in result["error"]
    assert "--sandbox auto" in result["error"]
    assert control["record"] == {
        "status": "unsandboxed",
        "mechanism": None,
        "reason": "simulated: no Landlock in this kernel",
        "processes": "new processes refused (seccomp)",  # refused without Landlock too
    }


@pytest.mark.processes
@needs_landlock
def test_threads_started_before_the_sandbox_are_refused_or_confined(world: dict[str, Path]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        policy = _policy(world, monkeypatch)
    data = {"data": f"open({str(world['data'] / 'labels.csv')!r}).read()"}
    try:
        result = run_child(policy, world["checkout"], data, mode="auto", thread=True)
    finally:
        discard(policy)
    if ABI < 8:  # only the calling thread would be confined: refuse, whatever the mode
        assert "enter the sandbox before starting any thread" in result["error"]
    else:
        assert result["record"]["mechanism"].endswith("all threads")
        assert result["probes"]["data"][0] == "PermissionError"


def test_off_does_nothing(tmp_path: Path) -> None:
    policy = SandboxPolicy(read_paths=[], write_dir=str(tmp_path))
    before = dict(os.environ)
    record = enter_sandbox(policy, "off")
    assert record.status == "unsandboxed" and record.reason == "sandbox off (--sandbox off)"
    assert dict(os.environ) == before


def test_the_policy_never_allows_a_hierarchy_that_holds_a_denied_path(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = _policy(world, monkeypatch)
    denied = [world["data"], world["store"], world["assets"] / "labels.csv"]
    refused_paths = [os.path.realpath(path) for path in denied]
    assert not any(path in policy.model_dump_json() for path in refused_paths)  # the worker learns none
    try:
        checkout = str(world["checkout"])
        assert checkout not in policy.read_paths  # split into its children
        assert f"{checkout}/sibling_module.py" in policy.read_paths
        assert f"{checkout}/pkg/assets/weights.txt" in policy.read_paths
        for path in policy.read_paths:
            for refused in refused_paths:
                assert not (refused + "/").startswith(path.rstrip("/") + "/"), (path, refused)
        assert stat.S_IMODE(os.stat(policy.write_dir).st_mode) == 0o700
        assert sys.base_prefix in policy.read_paths or any(
            sys.base_prefix.startswith(p + "/") for p in policy.read_paths
        )
    finally:
        discard(policy)
    assert not os.path.exists(policy.write_dir)


def test_a_model_file_inside_a_denied_path_is_refused(world: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="must be readable but lies inside the denied"):
        policy_for(
            denied=[world["data"]], extra_read=[world["data"] / "labels.csv"], write_dir=str(world["outside"])
        )


def test_an_adapter_module_found_only_in_the_current_directory_is_readable_and_importable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's my_adapter.py run from its directory by the console script, whose sys.path lacks the
    current directory: the worker's adapter directories start with it (as ``python -m`` looks), the module
    is readable and the directory, which holds the denied store, is listed before the worker is confined.
    Located, not run."""
    from streambench.harness.execution.worker_paths import worker_paths

    (tmp_path / "cwd_only_adapter.py").write_text("raise SystemExit('executed')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    paths = worker_paths()
    assert paths.adapter[0] == str(tmp_path)
    assert adapter_code("cwd_only_adapter:Model") == []  # not on this process's path
    found = adapter_code("cwd_only_adapter:Model", paths.adapter)
    assert found == [str(tmp_path / "cwd_only_adapter.py")]
    assert adapter_code("reference") == [str(ROOT / "adapters")]  # a registry name: its package
    policy = policy_for(
        denied=[tmp_path / "results"],
        extra_read=found,
        write_dir=str(tmp_path / "w"),
        adapter_paths=paths.adapter,
    )
    assert str(tmp_path / "cwd_only_adapter.py") in policy.read_paths
    assert policy.listed_paths[0] == str(tmp_path)
    with pytest.raises(ValueError, match="must be readable but lies inside the denied"):  # in the store
        policy_for(denied=[tmp_path], extra_read=found)


def test_a_torch_module_factory_found_only_in_the_current_directory_is_readable_and_importable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37 item 3: ``--adapter torch-module --option factory=kws.models:build`` from the project's
    root: the factory's package is the model's code, readable by the sealed worker, and its directory listed
    before the worker is confined (first on its path once confined), as for an adapter named
    module:Class."""
    from streambench.harness.execution.config import RunConfig
    from streambench.harness.execution.sandbox import sandbox_policy

    (tmp_path / "kws37").mkdir()
    (tmp_path / "kws37" / "__init__.py").write_text("raise SystemExit('executed')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    config = RunConfig(
        adapter="torch-module", adapter_options={"factory": "kws37.models:build"}, output_dir=tmp_path / "r"
    )
    policy = sandbox_policy(config)
    try:
        assert str(tmp_path / "kws37") in policy.read_paths and policy.listed_paths[0] == str(tmp_path)
        assert str(tmp_path) not in policy.read_paths  # carved: it holds the denied store
    finally:
        discard(policy)


def _event_score(model: FileReaderAdapter, frame: Frame) -> float:
    out = model.predict(frame)
    assert isinstance(out, Prediction)
    return float(out.scores[1])


def test_the_file_reader_cheats_where_it_can_read(world: dict[str, Path]) -> None:
    frame = Frame(index=0, t=0.0, inputs={"x": np.zeros(4)})
    path = str(world["data"] / "labels.csv")
    loud = FileReaderAdapter(FileReaderOptions(path=path))
    assert loud.read_ok and loud.read_outcome.startswith(f"read {path} (")
    with pytest.raises(RuntimeError, match="read the data: "):
        loud.predict(frame)
    quiet = FileReaderAdapter(FileReaderOptions(path=path, on_read="bias"))
    assert _event_score(quiet, frame) > 0.8  # the content biases the event score
    later = world["outside"] / "later.csv"
    honest = FileReaderAdapter(FileReaderOptions(path=str(later), on_read="bias"))
    assert not honest.read_ok and "FileNotFoundError" in honest.read_outcome
    assert _event_score(honest, frame) == 0.5
    later.write_text("labels that appeared later")
    honest.reset_state()  # it tries again at every reset
    assert honest.read_ok and _event_score(honest, frame) > 0.8
