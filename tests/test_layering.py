"""The floors' import rule (DESIGN.md "Layout"): harness -> protocols -> adapters, never upwards.

Checked statically on every module: protocols and adapters never import harness; adapters never import
protocols; concrete adapters import nothing of ours but the contract; protocols/metrics import no torch
and do no I/O; only harness/engine.py calls a model's predict().
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("adapters", "protocols", "harness")


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
    assert not {m for m in _imports(path) if m.split(".")[0] == "harness"}


@pytest.mark.parametrize("path", _modules("adapters"), ids=lambda p: str(p.relative_to(ROOT)))
def test_adapters_import_only_the_contract(path: Path) -> None:
    # (the registry reaches concrete adapters only through importlib, by name, at run time)
    ours = {m for m in _imports(path) if m.split(".")[0] in OURS}
    allowed = {"adapters.contract"}
    if path.name in ("torchscript.py", "onnx_runtime.py"):  # wrappers share the torch-module driver
        allowed.add("adapters.torch_module")
    assert ours <= allowed, f"{path.name} imports {sorted(ours)}"


@pytest.mark.parametrize("path", _modules("protocols/metrics"), ids=lambda p: str(p.relative_to(ROOT)))
def test_metrics_are_pure_numpy(path: Path) -> None:
    imported = {m.split(".")[0] for m in _imports(path)}
    assert not imported & {"torch", "os", "io", "pathlib", "json", "time", "harness", "adapters"}
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
    # shared-memory store per frame; documented and measured in harness/isolation_worker.py)
    assert callers == {"harness/engine.py", "harness/isolation_worker.py"}


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
