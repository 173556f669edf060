"""Every command shown in README.md and docs/*.md is run by a test (issue 26, item 3).

The commands are read from the pages' fenced ``bash`` / ``sh`` blocks (a line, or each part of a
``&&`` chain; ``# comments`` dropped). Two tiers:

- always (the plain ``python -m pytest``): every command is either a ``streambench`` command that parses
  against the command line as it is today (its command, options and option types), one of the few other
  commands this module runs, or in ``SKIPPED`` with the reason it cannot run here. A new command in the docs
  that is none of these fails the test, so the list cannot silently fall behind.
- ``-m docs_commands`` (a step of its own in ``.ci/run``; skipped otherwise): each command is run for real,
  as a reader would, from a scratch project directory that holds what the pages assume (the README's
  ``my_adapter.py``, a ``my_pkg`` package with a torch model factory and an adapter, ``model.pt``,
  ``model.onnx``, score files, a base checkout, two finished runs), with placeholders such as ``<run_id>``
  filled in and overrides that keep each run tiny (2 streams of 1 s, 10 warm-up frames, no report, 2 A/B
  pairs). Each must end with its expected exit code (0, or the code the page promises: 1 for a planted
  cheat or fault) and without a traceback.
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import typer

from tests.test_docs import PAGES, ROOT

SHELL_BLOCKS = {"bash", "sh", "shell", "console"}

# Commands shown in the docs that no test runs, each with the reason (matched on the command's start).
SKIPPED: dict[str, str] = {
    "python3 -m venv": "creates the reader's virtual environment; .ci/run makes its own before anything",
    ". .venv/bin/activate": "enters that environment (the shell's own '.'; .ci/run does the same)",
    "pip install": "installs from the package registry (network); .ci/run installs the same way in a fresh "
    "virtual environment before anything else runs",
    "ruff check": "part of the test command, which .ci/run runs",
    "mypy": "part of the test command, which .ci/run runs",
    "python -m pytest -m docs_commands": "this module's own slow tier",
    "python -m pytest tests/test_latency_gate.py": "the latency-gate recipe of docs/ci.md, run verbatim on a "
    "throwaway repository with an origin by tests/harness/integrations/test_pytest_ab_recipe.py",
    "git fetch origin": "the latency-gate recipe (run verbatim by tests/harness/integrations/"
    "test_pytest_ab_recipe.py)",
    "python -m pytest benchmarks": "an opt-in benchmark: minutes of measurement, meant for an otherwise idle "
    "machine (docs/performance.md)",
    "python -m pytest": "the test command itself, which .ci/run runs",
    "mkdocs build --strict": "a step of its own in .ci/run",
    "git worktree add": "the latency-gate recipe: needs a clone with a remote branch (origin/main); run "
    "verbatim by tests/harness/integrations/test_pytest_ab_recipe.py",
    "pytest tests/test_latency_gate.py": "the reader's own test file and base checkout; the streambench_ab "
    "fixture it calls is run by tests/harness/integrations/test_pytest_ab.py",
    "python examples/serving/websocket_server.py": "starts a server in the background: the docs_commands "
    "tier starts the example servers itself (on free ports, put in place of the pages' ports)",
    "python examples/serving/grpc_server.py": "as the WebSocket example server",
}

SERVED = {"websocket": "ws://127.0.0.1:8765", "grpc": "127.0.0.1:50051"}
"""The addresses docs/serving.md gives its example servers; the docs_commands tier starts each server on a
free port and puts its address in place of these."""

# Other commands that are run, not skipped.
RUN_AS_SHOWN = (
    "python -m tests.data.speech_like",
    "pytest examples/test_latency_example.py",
    "python examples/kws/make_data.py",  # docs/data.md's examples write their own data
    "python examples/video/make_clips.py",
    "python examples/throughput.py",  # docs/python.md's protocol, registered and run from Python
)

# Placeholders of the pages and what they stand for in the scratch project.
PLACEHOLDERS = {
    "results/<run_id>/scores.txt": "results/docs-detection/scores.txt",
    "<run_id>": "docs-run",
    "<run-a>": "docs-run",
    "<run-b>": "docs-run-b",
    "<run>": "docs-run",
    "BASE HEAD": "docs-run docs-run-b",
}

# Expected exit codes other than 0, by a fragment of the command (the pages say why).
EXIT_CODES: dict[str, set[int]] = {
    "--adapter offender-global-leak": {1},  # shared_state fails
    "--adapter offender-offbyone-mask": {1},  # gradient_flow fails
    "--adapter offender-leaky-reset": {1},  # state_leak fails
    "--adapter offender-caching": {1},  # caching fails
    "--adapter offender-rounding-cache": {1},  # caching fails
    "--adapter faulty": {1},  # an adapter failure is recorded: exit 1
    "streambench ab": {0, 1, 3},  # a verdict from 2 pairs on a shared machine: usually inconclusive
    "streambench compare": {0, 1, 3},  # a verdict; 3 when a side's measurement is INVALID
    "--benchmark-compare-fail": {0, 1},  # pytest-benchmark's check on a noisy machine (not recommended)
}

# Commands that fail today because of a bug in streambench, not in the page: expected to fail (strict, so
# the test says so once the bug is fixed and the entry must go).
KNOWN_BUGS: dict[str, str] = {}


@dataclass
class Shown:
    """One command shown in the docs, and every place it is shown."""

    text: str
    places: list[str] = field(default_factory=list)

    @property
    def argv(self) -> list[str]:
        return _without_redirections(shlex.split(self.text))


def _without_redirections(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in (">", ">>", "2>", "2>>"):
            skip = True
        else:
            out.append(token)
    return out


def _blocks(text: str) -> Iterator[tuple[int, str, list[str]]]:
    """``(first line number, language, lines)`` of each fenced block."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^\s*(```|~~~)\s*([\w+-]*)", lines[i])
        if not opening:
            i += 1
            continue
        fence, language = opening.group(1), opening.group(2).lower()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        yield start + 1, language, body


def _commands_of(line: str) -> list[str]:
    """The commands of one shell line: comments dropped, ``&&`` chains split, shell quoting kept."""
    tokens = shlex.split(line, comments=True)
    if not tokens:
        return []
    commands: list[list[str]] = []
    current: list[str] = []
    for token in tokens:
        if token == "&&":
            commands.append(current)
            current = []
        else:
            current.append(token)
    commands.append(current)
    return [shlex.join(command) for command in commands if command]


def shown_commands(pages: list[Path] = PAGES) -> list[Shown]:
    found: dict[str, Shown] = {}
    for page in pages:
        for start, language, body in _blocks(page.read_text(encoding="utf-8")):
            if language not in SHELL_BLOCKS:
                continue
            for offset, line in enumerate(body):
                for command in _commands_of(line.removeprefix("$ ")):
                    shown = found.setdefault(command, Shown(command))
                    name = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name
                    shown.places.append(f"{name}:{start + offset}")
    return list(found.values())


def _without_environment(argv: list[str]) -> list[str]:
    """The command after any leading ``NAME=value`` assignments."""
    i = 0
    while i < len(argv) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[i]):
        i += 1
    return argv[i:]


def skip_reason(shown: Shown) -> str | None:
    text = shlex.join(_without_environment(shown.argv))
    for start, reason in SKIPPED.items():
        if text == start or text.startswith(start + " "):
            return reason
    return None


def filled(shown: Shown) -> list[str]:
    """The command's words with the placeholders filled in (``ab ...`` repeats the first ``ab`` line's
    sides)."""
    text = shown.text
    for placeholder, value in PLACEHOLDERS.items():
        text = text.replace(placeholder, value)
    argv = _without_redirections(shlex.split(text))
    if argv[:3] == ["streambench", "ab", "..."]:
        argv[2:3] = ["--base-adapter", "work", "--base-option", "blocks=100", "--head-option", "blocks=110"]
    return argv


COMMANDS = shown_commands()
STREAMBENCH = [c for c in COMMANDS if c.argv[:1] == ["streambench"]]
IDS = [f"{c.places[0]} {c.text[:70]}" for c in COMMANDS]


# --------------------------------------------------------------------------------------------------
# always: every command is accounted for, and every streambench command parses


def _cli() -> Any:
    """The ``streambench`` console script's command (typer's click command), found through its entry
    point as pip installed it."""
    (entry,) = (e for e in metadata.entry_points(group="console_scripts") if e.name == "streambench")
    import typer.main

    module = importlib.import_module(entry.module)
    return typer.main.get_command(module.app)


def parse(argv: list[str]) -> Any:
    """Parse ``streambench ARGS`` down to the leaf command, converting every option, running nothing.
    A usage error raises ``typer.TyperException`` (click's ``UsageError``, vendored by typer)."""
    command = _cli()
    context = command.make_context("streambench", list(argv[1:]))
    while hasattr(command, "resolve_command"):  # a group: its subcommand next
        args = [*getattr(context, "_protected_args", []), *context.args]
        name, sub, rest = command.resolve_command(context, args)
        assert sub is not None and name is not None, f"no command in {argv}"
        command, context = sub, sub.make_context(name, rest, parent=context)
    return context


def test_the_pages_show_commands() -> None:
    texts = {c.text for c in COMMANDS}
    assert "streambench run" in texts  # the README's first command, after its && chain is split
    assert any(c.text.startswith("streambench run --protocol causality --adapter offender") for c in COMMANDS)
    assert len(STREAMBENCH) > 40


@pytest.mark.parametrize("shown", COMMANDS, ids=IDS)
def test_every_shown_command_is_run_or_skipped_with_a_reason(shown: Shown) -> None:
    argv = _without_environment(shown.argv)
    runnable = argv[:1] == ["streambench"] or shlex.join(argv).startswith(RUN_AS_SHOWN)
    assert runnable or skip_reason(shown), (
        f"{shown.places}: `{shown.text}` is neither run by tests/test_docs_commands.py nor in its SKIPPED "
        "list with a reason"
    )


@pytest.mark.parametrize("shown", STREAMBENCH, ids=[f"{c.places[0]} {c.text[:70]}" for c in STREAMBENCH])
def test_every_streambench_command_parses(shown: Shown, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    argv = filled(shown)
    assert not [word for word in argv if re.search(r"<[^>]+>", word)], f"a placeholder is left in {argv}"
    try:
        parse(argv)
    except typer.TyperException as error:  # an unknown command or option, a value of the wrong type
        pytest.fail(f"{shown.places}: `{shown.text}` does not parse: {error.format_message()}")


def test_the_parser_finds_planted_mistakes() -> None:
    """The check can fail: a misspelt option, a value of the wrong type, an unknown command."""
    parse(["streambench", "run", "--streams", "2", "--adapter", "null"])
    for wrong in (["run", "--stream", "2"], ["run", "--streams", "two"], ["runn"], ["score", "onlin", "x"]):
        with pytest.raises(typer.TyperException):
            parse(["streambench", *wrong])


def test_commands_are_read_from_shell_blocks_only(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Run `streambench inline` (not a block).\n\n"
        "```bash\n"
        "pip install -e . && streambench run   # a comment\n"
        'streambench ab ... --markdown >> "$GITHUB_STEP_SUMMARY"\n'
        "# a comment line\n"
        "```\n\n"
        "```toml\nstreambench = 'not a command'\n```\n"
        "```python\nstreambench_ab(adapter='x')\n```\n"
    )
    shown = {c.text: c for c in shown_commands([page])}
    ab = "streambench ab ... --markdown '>>' '$GITHUB_STEP_SUMMARY'"  # shell words, quoted as shlex.join does
    assert list(shown) == ["pip install -e .", "streambench run", ab]
    assert skip_reason(shown["pip install -e ."]) is not None
    assert skip_reason(shown["streambench run"]) is None
    assert filled(shown[ab]) == [
        *("streambench", "ab", "--base-adapter", "work", "--base-option", "blocks=100"),
        *("--head-option", "blocks=110", "--markdown"),
    ]


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """.ci/run runs the README's test command, step by step (pip as ``python -m pip``), in that order."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (line,) = re.findall(r"^pip install torch[^\n]*'\.\[dev\]'[^\n]*$", readme, flags=re.M)
    steps = [step.strip() for step in line.split("&&")]
    assert steps[-1] == "python -m pytest"
    ci = [
        line.strip().removeprefix("python -m ")
        for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    positions = [ci.index(step.removeprefix("python -m ")) for step in steps]
    assert positions == sorted(positions)


# --------------------------------------------------------------------------------------------------
# -m docs_commands: every command run, in a scratch project


def _selected(config: pytest.Config) -> bool:
    expression = str(config.getoption("markexpr") or "")
    return "docs_commands" in expression and "not docs_commands" not in expression


TORCH_MODELS = '''"""A reader's package: a recurrent torch model, its state passed in and out (mode=state)."""

import torch
from torch import nn


class Recurrent(nn.Module):
    def __init__(self, hidden: int = 8, classes: int = 29) -> None:
        super().__init__()
        self.hidden = hidden
        self.step = nn.LazyLinear(hidden)
        self.head = nn.Linear(hidden, classes)

    def initial_state(self) -> torch.Tensor:
        return torch.zeros(1, self.hidden)

    def forward(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        state = torch.tanh(self.step(x) + 0.5 * state)
        return self.head(state), state


def build() -> nn.Module:
    torch.manual_seed(0)
    return Recurrent()
'''


def _save_models(project: Path) -> None:
    """``model.pt`` (TorchScript, stateful, an exported ``reset()``) and ``model.onnx`` (state ``h`` in,
    ``h_out`` out), both for the synthetic data: 64 + 128 inputs, 29 classes."""
    import torch
    from torch import nn

    class Stateful(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.step = nn.Linear(192, 8)
            self.head = nn.Linear(8, 29)
            self.state = torch.zeros(1, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.state = torch.tanh(self.step(x) + 0.5 * self.state)
            return self.head(self.state)

        @torch.jit.export
        def reset(self) -> None:
            self.state = torch.zeros(1, 8)

    class Step(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.step = nn.Linear(192, 8)
            self.head = nn.Linear(8, 29)

        def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            h = torch.tanh(self.step(x) + 0.5 * h)
            return self.head(h), h

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.script(Stateful()), str(project / "model.pt"))
        torch.onnx.export(  # the TorchScript-based exporter: it needs the onnx package only
            Step().eval(),
            (torch.zeros(1, 192), torch.zeros(1, 8)),
            str(project / "model.onnx"),
            input_names=["x", "h"],
            output_names=["logits", "h_out"],
            dynamo=False,
        )


def _streambench(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run a shown command as a reader's shell would, from ``cwd``; the reader's own package (``my_pkg``)
    is importable there, as an installed one would be."""
    executable = shutil.which("streambench", path=str(Path(sys.executable).parent)) or "streambench"
    env = {**os.environ, "COLUMNS": "160", "NO_COLOR": "1"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(cwd), env.get("PYTHONPATH", "")) if p)
    env.pop("PYTEST_CURRENT_TEST", None)
    if argv[0] == "streambench":
        argv = [executable, *argv[1:]]
    elif argv[0] == "pytest":
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *argv[1:]]
    elif argv[0] == "python":
        argv = [sys.executable, *argv[1:]]
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A reader's working directory with everything the pages assume (built only when the slow tier runs)."""
    if not _selected(request.config):
        pytest.skip("runs every command of the docs (minutes): python -m pytest -m docs_commands")
    top = tmp_path_factory.mktemp("docs")
    project = top / "project"
    project.mkdir()
    shutil.copytree(ROOT / "examples", project / "examples")
    (project / "tests").symlink_to(ROOT / "tests")  # python -m tests.data.speech_like, as from a checkout
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (adapter_source,) = re.findall(r"```python\n(# my_adapter\.py\n.*?)```", readme, flags=re.S)
    (project / "my_adapter.py").write_text(adapter_source)
    for root in (project, top / "base"):  # ab --base-path ../base --head-path .
        (root / "my_pkg").mkdir(parents=True)
        (root / "my_pkg" / "__init__.py").write_text(f"{adapter_source}\n\nModel = LoudnessAdapter\n")
        (root / "my_pkg" / "models.py").write_text(TORCH_MODELS)
    _save_models(project)
    (project / "scores.txt").write_text("- - real 0.9\n- - real 0.7\n- - fake 0.4\n- - fake 0.1\n")
    (project / "preds.txt").write_text("0.9 1\n0.8 1\n0.6 0\n0.3 0\n0.7 1\n")
    (project / "run.txt").write_text("q1 Q0 a 1 0.9 s\nq1 Q0 b 2 0.8 s\nq2 Q0 c 1 0.7 s\n")
    (project / "qrels.txt").write_text("q1 0 b 1\nq2 0 c 2\nq2 0 d 1\n")
    tiny = ["--streams", "2", "--duration", "1", "--warmup-frames", "10", "--no-report", "--no-progress"]
    for argv in (
        ["streambench", "run", "--run-id", "docs-run", *tiny],  # a secret seed, as by default
        ["streambench", "run", "--run-id", "docs-run-b", *tiny],
        ["streambench", "run", "--protocol", "detection", "--run-id", "docs-detection", *tiny],
        ["python", "-m", "tests.data.speech_like", "speech"],
        ["python", "examples/kws/make_data.py", "kws_data"],  # the data docs/data.md's examples run on
        ["python", "examples/video/make_clips.py", "clips"],
    ):
        done = _streambench(argv, project)
        assert done.returncode == 0, f"{argv}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
    return project


def _given(argv: list[str], option: str) -> int:
    """The value of a numeric option the command sets itself, else a large number (none given)."""
    if option in argv and argv.index(option) + 1 < len(argv) and argv[argv.index(option) + 1].isdigit():
        return int(argv[argv.index(option) + 1])
    return 1 << 30


def tiny(argv: list[str]) -> list[str]:
    """The command with overrides that keep it small; click takes an option's last value."""
    if argv[:2] == ["streambench", "run"]:
        if "--resume" in argv:
            return argv  # the recorded configuration, as it was
        extra = ["--warmup-frames", "10", "--no-progress"]
        if "--report" not in argv:
            extra.append("--no-report")
        hysteresis = "hysteresis" in argv
        files = "--config" in argv and "examples/run.toml" not in argv  # a data set of files, as given
        if not hysteresis and not files:
            extra += ["--duration", "1"]
            if _given(argv, "--streams") > 4:  # a command's own few streams stay (a fault at stream 2 of 4)
                extra += ["--streams", "2"]
        protocol = argv[argv.index("--protocol") + 1] if "--protocol" in argv[:-1] else None
        if protocol == "capacity":
            # a search runs for minutes: N = 1 and 2 only, under examples/capacity.toml's loose bound
            for setting in ("streams=2", "min_point_s=0.5", "confidence=0.8", "target_miss_rate=0.05"):
                extra += ["-p", setting]
            extra += ["-p", "slack_misses=0", "-p", "budget_s=20"]  # after the command's own -p: it wins
        return [*argv, *extra]
    if argv[:2] == ["streambench", "ab"]:
        extra = ["--streams", "2", "--duration", "1", "--warmup-frames", "10", "--rounds", "2"]
        extra += ["--streams-per-round", "1", "--restart-every", "0", "--no-progress"]
        extra += ["--budget-s", "0"]  # one look at 2 pairs, not the default budget's sequence of looks
        if "--max-rounds" in argv:
            extra += ["--max-rounds", "3"]
        return [*argv, *extra]
    if argv[:2] == ["streambench", "sweep"]:
        return [*argv, "--no-progress"]
    return argv


def _expected_codes(text: str) -> set[int]:
    for fragment, codes in EXIT_CODES.items():
        if fragment in text:
            return codes
    return {0}


def _run_params() -> list[Any]:
    params = []
    for shown in COMMANDS:
        if skip_reason(shown) is not None:
            continue
        bugs = [reason for fragment, reason in KNOWN_BUGS.items() if fragment in shown.text]
        marks = [pytest.mark.xfail(strict=True, reason=bugs[0])] if bugs else []
        params.append(pytest.param(shown, marks=marks, id=f"{shown.places[0]} {shown.text[:70]}"))
    return params


@pytest.fixture(scope="module")
def example_servers(project: Path) -> Iterator[dict[str, str]]:
    """examples/serving/'s WebSocket and gRPC servers, each on a free port; yields the pages' address of
    each server mapped to its real one. They are ended on the way out."""
    started: list[subprocess.Popen[str]] = []
    addresses = {}
    try:
        for kind, shown in SERVED.items():
            script = project / "examples" / "serving" / f"{kind}_server.py"
            server = subprocess.Popen(
                [sys.executable, str(script), "--port", "0"], cwd=project, stdout=subprocess.PIPE, text=True
            )
            started.append(server)
            assert server.stdout is not None
            line = server.stdout.readline()  # "serving reference on ws://127.0.0.1:40211"
            assert " on " in line, f"{script} did not start: {line!r}"
            addresses[shown] = line.strip().rpartition(" on ")[2]
        yield addresses
    finally:
        for server in started:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(10)


def _served_at(argv: list[str], addresses: dict[str, str]) -> list[str]:
    """The command with the pages' server addresses replaced by the running servers'."""
    for shown, real in addresses.items():
        argv = [word.replace(shown, real) for word in argv]
    return argv


@pytest.mark.docs_commands
@pytest.mark.parametrize("shown", _run_params())
def test_every_shown_command_runs(shown: Shown, project: Path, example_servers: dict[str, str]) -> None:
    argv = _served_at(tiny(filled(shown)), example_servers)
    if "--benchmark-compare" in argv and not (project / ".benchmarks").exists():  # run alone: its baseline
        saved = _streambench(["pytest", "examples/test_latency_example.py", "--benchmark-autosave"], project)
        assert saved.returncode == 0, saved.stdout[-3000:]
    done = _streambench(argv, project)
    output = f"{shlex.join(argv)}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    assert done.returncode in _expected_codes(shown.text), output
    assert "Traceback (most recent call last)" not in done.stdout + done.stderr, output
