"""``streambench run --adapter torch-module --option factory=pkg.models:build`` from the directory that holds
``pkg/``, with no PYTHONPATH, in every way the adapter runs (issue 37): the factory is found as ``python -m``
finds a module (the working directory), in this process, in an isolated worker and in the sealed one, and
it is told the data's classes and payload sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import run_streambench

pytestmark = pytest.mark.slow

FACTORY = '''"""A model whose factory sizes it from the data (classes, input_dims)."""

import torch


class Head(torch.nn.Module):
    def __init__(self, dims: int, num_classes: int) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(dims, num_classes)

    def forward(self, x, state):
        return self.fc(x), state


def build(classes, input_dims):
    return Head(sum(input_dims.values()), len(classes))
'''


@pytest.mark.parametrize("mode", ["--in-process", "--no-sealed", "--sealed"])
def test_a_factory_in_the_working_directory_runs_without_pythonpath(tmp_path: Path, mode: str) -> None:
    package = tmp_path / "kws_cwd_37"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(FACTORY)
    args = ["run", "--adapter", "torch-module", "--option", "factory=kws_cwd_37.models:build", mode]
    args += ["-n", "2", "--duration", "2", "--warmup-frames", "5", "--output-dir", "out", "--run-id", "r"]
    done = run_streambench(args, cwd=tmp_path, PYTHONPATH="")  # an empty PYTHONPATH is no PYTHONPATH
    assert done.returncode == 0, done.stderr + done.stdout
    result = json.loads((tmp_path / "out" / "r" / "result.json").read_text())
    expected = {"--in-process": "in-process", "--no-sealed": "isolated", "--sealed": "sealed"}[mode]
    assert result["execution"]["mode"] == expected
    assert len(result["adapter_info"]["classes"]) == 29  # the synthetic data's, told to the factory
    assert result["scored"]["scored_streams"] == 2 and not result["failures"]
