"""The floors' import rule (DESIGN.md "Layout"): harness -> protocols -> adapters, never upwards.

Checked statically on every module: protocols and adapters never import harness; adapters never import
protocols; concrete adapters import nothing of ours but the contract; protocols/metrics import no torch
and do no I/O; only harness/execution/engine.py calls a model's predict().
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("adapters", "protocols", "harness")
"""The three floors, installed as streambench.adapters, streambench.protocols and streambench.harness."""


def _floor(module: str) -> str | None:
    """The floor a module name belongs to (``streambench.harness.cli`` -> ``harness``); ``streambench``
    itself, the public API above all three floors, counts as the top floor."""
    parts = module.split(".")
    if parts[0] != "streambench":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in OURS else "streambench"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize(
    "path", _modules("protocols") + _modules("adapters"), ids=lambda p: str(p.relative_to(ROOT))
)
def test_lower_floors_never_import_harness(path: Path) -> None:
    assert not {m for m in _imports(path) if _floor(m) in ("harness", "streambench")}


@pytest.mark.parametrize("path", _modules("adapters"), ids=lambda p: str(p.relative_to(ROOT)))
def test_adapters_import_only_the_contract(path: Path) -> None:
    # (the registry reaches concrete adapters only through importlib, by name, at run time)
    ours = {m for m in _imports(path) if _floor(m) is not None}
    # the codebook: data and models share it
    allowed = {"streambench.adapters.contract", "streambench.adapters.codebook"}
    # wrappers (and the reference GRU, a module the wrapper drives) share the torch-module driver
    if path.name in ("torchscript.py", "onnx_runtime.py", "reference_gru.py"):
        allowed.add("streambench.adapters.torch_module")
    if path.name == "onnx_runtime.py":  # its batch mode, kept in a module of its own
        allowed.add("streambench.adapters.onnx_batch")
        # and its load-time checks of the model's declared names, shapes and types, in one of their own
        allowed.add("streambench.adapters.onnx_load_checks")
    # a model's code named by module (module:Class, factory=), imported as python -m finds it, in one place
    if path.name in ("registry.py", "torch_module.py"):
        allowed.add("streambench.adapters.importing")
    # the served adapters share their sessions and reply checks, and the gRPC one its generated messages
    if path.parent.name == "served":
        allowed |= {
            "streambench.adapters.served.common",
            "streambench.adapters.served.streambench_serving_pb2",
        }
    # more planted offenders, on the offenders' honest model (adapters/offenders/__init__.py)
    if path.name == "sneaky.py" or path.parent.name == "offenders":
        allowed.add("streambench.adapters.offenders")
    if path.name == "hidden_work.py":  # more clock offenders, on the clock offenders' busy work
        allowed.add("streambench.adapters.offenders.clock")
    assert ours <= allowed, f"{path.name} imports {sorted(ours)}"


@pytest.mark.parametrize("path", _modules("protocols/metrics"), ids=lambda p: str(p.relative_to(ROOT)))
def test_metrics_are_pure_numpy(path: Path) -> None:
    imported = {_floor(m) or m.split(".")[0] for m in _imports(path)}
    forbidden = {"torch", "os", "io", "pathlib", "json", "time", "harness", "adapters", "streambench"}
    assert not imported & forbidden
    source = path.read_text()
    assert "open(" not in source


def test_only_the_engine_calls_predict() -> None:
    callers = set()
    for package in ("protocols", "harness"):
        for path in _modules(package):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Attribute) and node.attr in {"predict", "predict_sequence"}:
                    callers.add(path.relative_to(ROOT).as_posix())
                if (  # getattr(adapter, "predict") is a call to predict too
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id in {"getattr", "setattr"}
                    and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value in {"predict", "predict_sequence"}
                ):
                    callers.add(path.relative_to(ROOT).as_posix())
    # the isolated worker wraps the adapter's predict in a progress marker the engine then calls (one
    # shared-memory store per frame; documented and measured in harness/execution/isolation_worker.py);
    # the capacity protocol's serving worker feeds many streams' frames (issue 28)
    serving = "harness/execution/serving_worker.py"
    assert callers == {"harness/execution/engine.py", "harness/execution/isolation_worker.py", serving}


ALL_MODULES = _modules("harness") + _modules("protocols") + _modules("adapters")


@pytest.mark.parametrize("path", ALL_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_pickle_in_the_result_path(path: Path) -> None:
    """Issue 7: nothing we read is unpickled: no pickle module, np.load only with allow_pickle=False,
    torch.load only with weights_only=True."""
    tree = ast.parse(path.read_text())
    assert not {m for m in _imports(path) if m.split(".")[0] in ("pickle", "dill", "cloudpickle", "joblib")}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value.id if isinstance(node.func.value, ast.Name) else None
        keywords = {k.arg: k.value for k in node.keywords}
        if (owner, node.func.attr) == ("np", "load"):
            flag = keywords.get("allow_pickle")
            assert isinstance(flag, ast.Constant) and flag.value is False, f"line {node.lineno}: np.load"
        if (owner, node.func.attr) == ("torch", "load"):
            flag = keywords.get("weights_only")
            assert isinstance(flag, ast.Constant) and flag.value is True, f"line {node.lineno}: torch.load"


# -- inside harness/: rooms that import down, and no import cycle (issue 14) ------------------------------

ROOMS: dict[str, int] = {
    "io": 0,
    "instruments": 1,
    "datasets": 1,
    "execution": 2,
    "results": 3,
    "report": 4,
    "runs": 5,
    "sweep": 6,
    "api": 7,
    "integrations": 8,
    "cli": 8,
}
"""Each room of harness/ and its level: a module may import its own room and rooms of a lower level only
(rooms of one level are independent of each other). docs/architecture.md draws the same picture."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(["streambench", *(parts[:-1] if parts[-1] == "__init__" else parts)])


HARNESS = {_module_name(p): p for p in _modules("harness")}


def _harness_edges(path: Path, known: dict[str, Path], name: str | None = None) -> set[str]:
    """Every harness module ``path`` imports, wherever the import stands (module level, inside a function,
    under ``if TYPE_CHECKING``): ``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else
    to ``a.b``; a relative import is resolved against the module's package."""
    name = name or _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            edges.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                edges.add(target if target in known else base)
    return {e for e in edges if e in known}


def _graph(known: dict[str, Path]) -> dict[str, set[str]]:
    return {name: _harness_edges(path, known) - {name} for name, path in known.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _room(module: str) -> str | None:
    parts = module.split(".")  # streambench.harness.<room>...
    return parts[2] if len(parts) > 2 else None


def test_every_harness_module_lives_in_a_room() -> None:
    loose = sorted(m for m in HARNESS if m != "streambench.harness" and _room(m) not in ROOMS)
    assert not loose, f"modules outside the rooms of ROOMS: {loose}"


def test_no_import_cycle_between_harness_modules() -> None:
    assert _cycles(_graph(HARNESS)) == []


EVERY_MODULE = {_module_name(p): p for p in ALL_MODULES}


@pytest.mark.parametrize("floor", ["protocols", "adapters"])
def test_no_import_cycle_in_the_lower_floors(floor: str) -> None:
    """protocols/ and adapters/ hold no import circle either (counted like harness/'s: an import inside a
    function or under ``if TYPE_CHECKING`` is an edge too)."""
    known = {name: path for name, path in EVERY_MODULE.items() if name.split(".")[1] == floor}
    assert _cycles(_graph(known)) == []


def test_the_cycle_check_finds_a_planted_cycle(tmp_path: Path) -> None:
    """The check can fail: two modules that import each other, one of them from inside a function."""
    planted = tmp_path / "harness" / "results"
    planted.mkdir(parents=True)
    (planted / "a.py").write_text("from streambench.harness.results import b\n")
    (planted / "b.py").write_text("def f():\n    from streambench.harness.results.a import x\n")
    known = {
        "streambench.harness.results.a": planted / "a.py",
        "streambench.harness.results.b": planted / "b.py",
    }
    assert _cycles({n: _harness_edges(p, known, n) - {n} for n, p in known.items()}) == [
        ["streambench.harness.results.a", "streambench.harness.results.b"]
    ]


@pytest.mark.parametrize("name", sorted(HARNESS), ids=str)
def test_rooms_import_only_rooms_below(name: str) -> None:
    room = _room(name)
    if room is None:
        return  # the package itself: its version only
    upward = sorted(
        target
        for target in _harness_edges(HARNESS[name], HARNESS)
        if (other := _room(target)) is not None and other != room and ROOMS[other] >= ROOMS[room]
    )
    assert not upward, f"{name} ({room}, level {ROOMS[room]}) imports a room at or above it: {upward}"


def test_the_registry_names_only_modules_of_its_own_room() -> None:
    from streambench.harness.runs.registry import BUILT_IN

    for name, target in BUILT_IN.items():
        module, _, cls = target.partition(":")
        assert module in HARNESS and _room(module) == "runs", f"{name} -> {target}"
        source = HARNESS[module].read_text()
        declared = re.search(rf"^class {cls}\(RunProtocol\[[^\[\]]+, \w+\]\):", source, flags=re.M)
        assert declared, f"{target} is not a RunProtocol[<config>, <result>] alone (it lists no parts)"


GENERIC = _modules("harness/cli") + _modules("harness/sweep") + _modules("harness/results")
# exempt: `streambench score online|detection|...` re-scores files by metric family, not by protocol; and
# results/files.py is the schema of result.json, which records the protocol that wrote it
GENERIC = [p for p in GENERIC if p.name not in ("score.py", "files.py")]
GENERIC += [
    ROOT / "harness/runs/catalog.py",
    ROOT / "harness/runs/interface.py",
    ROOT / "harness/report/__init__.py",
]
GENERIC += [ROOT / "harness/report/bundle.py"]


@pytest.mark.parametrize("path", GENERIC, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_code_that_iterates_the_registry_names_no_protocol(path: Path) -> None:
    """The CLI, the sweep, the store, compare and the report reach the protocols through the registry
    only: no string in their code is a protocol's name (docstrings and messages may mention them)."""
    from streambench.harness.runs.registry import BUILT_IN

    named = sorted(
        {
            (node.lineno, node.value)
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in BUILT_IN
        }
    )
    assert not named, f"{path.name} names protocols: {named}"


@pytest.mark.processes
def test_the_cli_starts_without_torch_or_scipy() -> None:
    """Issue 17: every command paid 4-10 s of start-up (`import streambench.harness.cli` imported torch
    through the data set and scipy.stats through compare). A fresh interpreter imports the CLI and none of
    them, nor numpy or pydantic (each command imports the machinery it runs): `--help` costs typer and
    rich."""
    import subprocess
    import sys

    heavy = "{'torch', 'scipy.stats', 'numpy', 'pydantic'}"
    code = f"import sys, streambench.harness.cli; print(sorted({heavy} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]", done.stdout
