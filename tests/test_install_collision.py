"""streambench and AdapterHub's ``adapters`` in one environment (issue 26, item 1).

Before 0.2 streambench installed top-level packages named ``harness``, ``protocols`` and ``adapters``;
AdapterHub's ``adapters`` then wrote into the same ``site-packages/adapters/`` and uninstalling either
broke the other. Now everything of ours is under ``streambench``. This test installs, in a fresh virtual
environment, the wheel of this source tree and ``adapters==1.3.0`` (without dependencies, and
``transformers``, which its ``__init__`` imports), and checks that both import from their own directories,
that ``streambench run`` works, and that uninstalling either leaves every file of the other in place.

The environment borrows the running environment's packages (torch, numpy, ...) through a ``.pth`` file
instead of installing them again; only the two packages under test are installed into it, from the
wheel and the registry. Slow tier (``python -m pytest -m slow``): about a minute, most of it pip.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
HUB = "adapters==1.3.0"
HUB_NEEDS = "transformers~=4.57.6"  # what adapters 1.3.0's __init__ imports (its own requirement)


def _pip(python: Path, *args: str) -> None:
    command = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check", *args]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"


def _python(python: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd=cwd)


def _files_of(python: Path, distribution: str, cwd: Path) -> list[Path]:
    """Every file the distribution's RECORD lists, as absolute paths."""
    code = f"import json, importlib.metadata as m; d = m.distribution({distribution!r}); "
    code += "print(json.dumps([str(d.locate_file(f)) for f in d.files or []]))"
    done = _python(python, code, cwd)
    assert done.returncode == 0, done.stderr
    return [Path(p) for p in json.loads(done.stdout)]


def _wheel(tmp: Path) -> Path:
    """The wheel of this source tree (built from a copy: nothing is written into the checkout)."""
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for name in ("streambench", "harness", "protocols", "adapters"):
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=ignore)
    command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(source)]
    subprocess.run([*command, "-w", str(tmp / "wheels")], check=True, capture_output=True)
    (wheel,) = (tmp / "wheels").glob("streambench-*.whl")
    return wheel


def _run_works(env: Path, cwd: Path) -> None:
    out = cwd / "results"
    command = [str(env / "bin" / "streambench"), "run", "--streams", "2", "--duration", "1"]
    command += ["--warmup-frames", "5", "--no-progress", "--no-report", "--output-dir", str(out), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    shutil.rmtree(out)


def test_streambench_and_adapterhub_share_an_environment(tmp_path: Path) -> None:
    env, cwd = tmp_path / "env", tmp_path / "elsewhere"
    cwd.mkdir()  # not the checkout: nothing of the source tree is on the path
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    site = Path(
        _python(python, "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd).stdout.strip()
    )
    (site / "_borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    _pip(python, "install", "--no-deps", str(_wheel(tmp_path)))
    _pip(python, "install", "--no-deps", HUB)
    _pip(python, "install", HUB_NEEDS)

    both = _python(
        python,
        "import adapters, streambench, streambench.adapters.contract as c; "
        "print(adapters.__file__); print(c.__file__); print(adapters.__version__)",
        cwd,
    )
    assert both.returncode == 0, both.stderr
    hub_file, ours_file, hub_version = both.stdout.split()
    assert Path(hub_file).parent == site / "adapters" and hub_version == "1.3.0"
    assert Path(ours_file).is_relative_to(site / "streambench")
    assert not (site / "adapters" / "contract.py").exists()  # nothing of ours in AdapterHub's directory
    _run_works(env, cwd)

    ours = _files_of(python, "streambench", cwd)
    _pip(python, "uninstall", "-y", "adapters")
    assert all(f.exists() for f in ours if "__pycache__" not in f.parts)
    assert _python(python, "import streambench.harness.cli", cwd).returncode == 0
    _run_works(env, cwd)

    _pip(python, "install", "--no-deps", HUB)
    hub = _files_of(python, "adapters", cwd)
    _pip(python, "uninstall", "-y", "streambench")
    assert all(f.exists() for f in hub if "__pycache__" not in f.parts)
    after = _python(python, "import adapters; print(adapters.__version__)", cwd)
    assert after.returncode == 0 and after.stdout.strip() == "1.3.0", after.stderr
    assert _python(python, "import streambench", cwd).returncode == 1  # really gone
