"""Which files an adapter's code came from (harness/execution/code_identity.py), hashed by the harness."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from streambench.adapters.null import NullAdapter
from streambench.harness.execution.code_identity import CodeFile, code_files, identify, same_code


def test_the_adapter_class_and_a_factory_option_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    null_file = str(Path(sys.modules["streambench.adapters.null"].__file__ or "").resolve())
    assert code_files(NullAdapter()) == [
        {"role": "adapter", "name": "streambench.adapters.null:NullAdapter", "file": null_file}
    ]
    pytest.importorskip("torch")
    from streambench.adapters.registry import create_adapter

    (tmp_path / "kws_identity").mkdir()
    (tmp_path / "kws_identity" / "__init__.py").write_text("")
    (tmp_path / "kws_identity" / "models.py").write_text(
        "import torch\n\n\nclass Step(torch.nn.Linear):\n    def reset(self):\n        pass\n\n\n"
        "def build():\n    return Step(4, 2)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    adapter = create_adapter(
        "torch-module",
        {"factory": "kws_identity.models:build", "mode": "stateful"},
        data_bound={"classes": ("a", "b"), "input_dims": {"audio": 4}},
    )
    names = {c["name"]: c["file"] for c in code_files(adapter)}
    assert names["factory=kws_identity.models:build"] == str(
        (tmp_path / "kws_identity" / "models.py").resolve()
    )


def test_the_harness_hashes_each_file_itself(tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    model.write_text("x = 1\n")
    files = identify([{"role": "option", "name": "factory=model:build", "file": str(model)}])
    assert files is not None and files[0].sha256 == hashlib.sha256(b"x = 1\n").hexdigest()
    assert identify(None) is None  # a worker that does not say (an older checkout's)
    missing = identify([{"role": "adapter", "name": "m:C", "file": str(tmp_path / "gone.py")}])
    assert missing is not None and missing[0].sha256 is None


def test_same_code_means_the_very_same_files() -> None:
    adapter = CodeFile(
        role="adapter", name="streambench.adapters.torch_module:TorchModuleAdapter", file="/a/tm.py"
    )

    def factory(path: str) -> CodeFile:
        return CodeFile(role="option", name="factory=kws.models:build", file=path)

    assert same_code([adapter, factory("/head/kws/models.py")], [adapter, factory("/head/kws/models.py")])
    assert not same_code([adapter, factory("/base/kws/models.py")], [adapter, factory("/head/kws/models.py")])
    assert not same_code(None, [adapter])  # not reported: nothing to compare
    assert not same_code(
        [CodeFile(role="adapter", name="m:C", file=None)], [CodeFile(role="adapter", name="m:C", file=None)]
    )
