"""The latency gate as a user reaches it (harness/integrations/pytest_ab.py): a git repository whose torch
model lives in a package at its root (``kws/models.py``, used through ``--adapter torch-module``), the base
in a worktree of another commit, and docs/ci.md's recipe run verbatim.

Each side must run its own code: the report names each side's model file, and a slower head is called a
regression (before the fix both sides imported the head's file, and no regression could be seen)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]

MODEL = """import torch
from torch import nn

REPS = {reps}


class Model(nn.Module):
    def __init__(self, input_dim=64, classes=29):
        super().__init__()
        self.inp, self.hidden, self.out = nn.Linear(input_dim, 64), nn.Linear(64, 64), nn.Linear(64, classes)

    def reset(self):
        pass

    def forward(self, x):
        h = torch.tanh(self.inp(x))
        for _ in range(REPS):
            h = torch.tanh(self.hidden(h))
        return self.out(h)


def build(input_dim=64, n_classes=29):
    torch.manual_seed(0)
    return Model(input_dim, n_classes)
"""


def _recipe() -> tuple[str, list[str]]:
    """docs/ci.md's recipe: the test file (its first line names it) and the shell commands."""
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    section = page[page.index("## The recipe") :]
    section = section[: section.index("\n## ", 1)]
    (test,) = re.findall(r"```python\n(# tests/test_latency_gate\.py\n.*?)```", section, flags=re.S)
    (shell,) = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    return test, [line for line in shell.splitlines() if line.strip()]


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _project(top: Path, test_source: str, base_reps: int) -> Path:
    """A user's repository: ``kws`` at its root, the latency test, main pushed to a bare origin."""
    origin, project = top / "origin.git", top / "project"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    (project / "kws").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "kws" / "__init__.py").write_text("")
    (project / "kws" / "models.py").write_text(MODEL.format(reps=base_reps))
    (project / "tests" / "test_latency_gate.py").write_text(test_source.split("\n", 1)[1])
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "base")
    _git(project, "remote", "add", "origin", str(origin))
    _git(project, "push", "-q", "origin", "main")
    return project


def _change(project: Path, reps: int) -> None:
    (project / "kws" / "models.py").write_text(MODEL.format(reps=reps))
    _git(project, "commit", "-q", "-am", "the change under test")


def _shell(project: Path, commands: list[str], extra: str = "") -> subprocess.CompletedProcess[str]:
    """The commands as a CI job's shell runs them (this environment's python first on PATH)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_CURRENT_TEST")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    script = "set -e\n" + "\n".join(commands[:-1]) + f"\n{commands[-1]}{extra}\n"
    return subprocess.run(["bash", "-c", script], cwd=project, env=env, capture_output=True, text=True,
                          timeout=1500, check=False)  # fmt: skip


def _report(xml: Path) -> dict[str, Any]:
    values = [
        p.get("value") for p in ElementTree.parse(xml).iter("property") if p.get("name") == "streambench_ab"
    ]
    assert values, f"no streambench_ab report in {xml}"
    report: dict[str, Any] = json.loads(values[0] or "{}")
    return report


def test_each_side_runs_its_own_checkouts_model(tmp_path: Path) -> None:
    """The situation of a user's CI: the head's package at the project's root, the base a worktree of the
    commit before with another version of it; a head 60 % slower is a regression, each side's file named."""
    test = "# tests/test_latency_gate.py\n" + _recipe()[0].split("\n", 1)[1].replace("+10%", "+5%")
    project = _project(tmp_path, test, base_reps=6)
    _git(project, "worktree", "add", "-q", str(tmp_path / "base"), "HEAD")
    _change(project, reps=12)  # about +60 % a frame
    xml = tmp_path / "gate.xml"
    command = f"python -m pytest tests/test_latency_gate.py --streambench-base-path {tmp_path / 'base'}"
    done = _shell(project, [command], extra=f" -p no:cacheprovider --junitxml={xml}")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "latency regression" in done.stdout
    report = _report(xml)
    assert report["verdict"] == "regression"
    base, head = report["sides"]
    base_files = {c["name"]: c for c in base["code"]}
    head_files = {c["name"]: c for c in head["code"]}
    factory = "factory=kws.models:build"
    assert base_files[factory]["file"] == str((tmp_path / "base" / "kws" / "models.py").resolve())
    assert head_files[factory]["file"] == str((project / "kws" / "models.py").resolve())
    assert base_files[factory]["sha256"] != head_files[factory]["sha256"]


@pytest.mark.parametrize(("head_reps", "outcome"), [(13, "regression"), (10, "no regression")])
def test_the_recipe_run_verbatim(tmp_path: Path, head_reps: int, outcome: str) -> None:
    """docs/ci.md's recipe, its commands as they stand, in the user's checkout of the change: a change of
    about +20 % a frame fails the job, the same code passes it."""
    test, commands = _recipe()
    project = _project(tmp_path, test, base_reps=10)
    if head_reps != 10:
        _change(project, head_reps)
    done = _shell(project, commands)
    output = done.stdout[-4000:] + done.stderr[-2000:]
    if outcome == "regression":
        assert done.returncode == 1 and "streambench ab: latency regression" in done.stdout, output
        assert str((tmp_path / "base" / "kws" / "models.py").resolve()) in done.stdout  # the base's own file
    else:
        assert done.returncode == 0 and "1 passed" in done.stdout, output
