"""The fault campaign's checks (benchmarks/fault_campaign.py): what a clear outcome of a scenario is, one
function per kind of outcome, shared by the scenario modules. Not a test module."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from fault_campaign import Check, Ctx


def names(text: str) -> list[str]:
    """The whitespace-separated names in ``text`` (the scenarios' tables)."""
    return text.split()


def _words(text: str, words: tuple[str, ...]) -> list[str]:
    low = text.lower()
    return [w for w in words if w.lower() not in low]


def recorded(*words: str, frame: int | None = 5) -> Check:
    """A recorded failure: exit 1, result.json with a failure (at ``frame``), naming ``words``."""

    def check(ctx: Ctx) -> tuple[str, str] | None:
        result = ctx.json("result.json")
        if result is None and ctx.rc == 2 and "no test stream was scored" in ctx.stderr:
            return "survived", "exit 2: every stream failed (a restarted worker faults again), each logged"
        if result is None:
            logged = [r for r in ctx.runs() if (r / "events.jsonl").is_file()]
            return ("lost" if logged else "wrong"), f"exit {ctx.rc}, no readable result.json"
        failures = result.get("failures") or []
        audit = [c for c in (result.get("session_audit") or {}).get("checks", []) if not c.get("passed")]
        if ctx.rc != 1 or (not failures and not audit):
            return "wrong", f"exit {ctx.rc}, {len(failures)} failure(s) recorded: the fault went unrecorded"
        text = json.dumps(failures) + json.dumps(audit)
        at = f"frame {frame}"
        named = any(f.get("frame") == frame for f in failures) or at in json.dumps(audit)
        if frame is not None and not named:
            return "wrong", f"failure recorded at frames {[f.get('frame') for f in failures]}, not {frame}"
        missing = _words(text + ctx.out, words)
        if missing:
            return "wrong", f"the failure does not say {missing}: {text[:200]}"
        return None

    return check


def clean(ctx: Ctx) -> tuple[str, str] | None:
    """Nothing wrong was done: exit 0 and a result without failures."""
    result = ctx.json("result.json")
    if result is None:
        return "wrong", f"exit {ctx.rc}, no readable result.json"
    if ctx.rc != 0 or result.get("failures"):
        messages = [f.get("message", "")[:120] for f in result.get("failures") or []]
        return "wrong", f"exit {ctx.rc} for an honest model: {messages[:2]}"
    return None


def either(ctx: Ctx) -> tuple[str, str] | None:
    """Accepted (exit 0, a clean result) or recorded (exit 1: a failure, a failed audit or the parent's
    clock disagreeing): either is clear."""
    if ctx.rc == 1 and "the parent's clock disagrees" in ctx.stdout:
        return "survived", "exit 1: the parent's clock disagrees with the worker's (named)"
    return clean(ctx) if ctx.rc == 0 else recorded(frame=None)(ctx)


def clear_error(*words: str, code: int = 2) -> Check:
    """A clear error before or instead of a result: exit ``code``, one message naming ``words``."""

    def check(ctx: Ctx) -> tuple[str, str] | None:
        if ctx.rc != code:
            return "wrong", f"exit {ctx.rc}, not {code}: {ctx.out.strip().splitlines()[-1:]!s:.200}"
        missing = _words(ctx.out, words)
        if missing:
            return "wrong", f"the message does not say {missing}: {ctx.stderr.strip()[-200:]}"
        return None

    return check


def no_escape_codes(inner: Check) -> Check:
    """``inner``, once no terminal escape code of the model's reached the console."""

    def check(ctx: Ctx) -> tuple[str, str] | None:
        if "\x1b[2J" in ctx.out or "\x07" in ctx.out:
            return "escape", "a model's terminal escape codes reached the console"
        return inner(ctx)

    return check


def cap_failed(*words: str) -> Check:
    """Capacity: exit 1, capacity.json with status failed and the failure naming ``words``."""

    def check(ctx: Ctx) -> tuple[str, str] | None:
        result = ctx.json("capacity.json")
        if result is None:
            return "lost", f"exit {ctx.rc}, no readable capacity.json"
        score = result.get("score", {})
        failure = json.dumps(score.get("failure"))
        if ctx.rc != 1 or score.get("status") != "failed" or score.get("failure") is None:
            return "wrong", f"exit {ctx.rc}, status {score.get('status')}, failure {failure[:120]}"
        missing = _words(failure + ctx.out, words)
        if missing:
            return "wrong", f"the failure does not say {missing}: {failure[:200]}"
        return None

    return check


def cap_ok(ctx: Ctx) -> tuple[str, str] | None:
    """Capacity: exit 0 and a capacity.json without a failure."""
    result = ctx.json("capacity.json")
    if result is None:
        return "wrong", f"exit {ctx.rc}, no readable capacity.json"
    if ctx.rc != 0 or result["score"].get("failure"):
        failure = json.dumps(result["score"].get("failure"))
        return "wrong", f"exit {ctx.rc}, failure {failure[:150]}"
    return None


def write(name: str, text: str) -> Callable[[Path], None]:
    """A scenario's setup: the file ``name`` holding ``text`` in its directory."""

    def setup(directory: Path) -> None:
        (directory / name).write_text(text)

    return setup


def in_tmpfs(argv: list[str], size: str = "4m", ro: bool = False) -> list[str]:
    """``argv`` in a private mount namespace whose ``results/`` is a tmpfs of ``size`` (read-only:
    ``ro``)."""
    options = f"ro,size={size}" if ro else f"size={size}"
    script = f'mkdir -p results && mount -t tmpfs -o {options} tmpfs results && exec "$@"'
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *argv]


def json_alone_ab(ctx: Ctx) -> tuple[str, str] | None:
    """``--json``: the command's stdout is one JSON document and nothing else."""
    try:
        json.loads(ctx.stdout)
    except ValueError:
        start = ctx.stdout[:40]
        return "wrong", f"--json's stdout is not JSON alone ({len(ctx.stdout)} bytes, starts {start!r})"
    return None


def json_alone(ctx: Ctx) -> tuple[str, str] | None:
    """``run --json``: JSON alone on stdout, and a clean result."""
    return json_alone_ab(ctx) or clean(ctx)


def ab_error(*words: str) -> Check:
    """``ab`` with a side that fails: exit 1, 2 or 3 and a message naming ``words``."""

    def check(ctx: Ctx) -> tuple[str, str] | None:
        if ctx.rc not in (1, 2, 3):
            return "wrong", f"exit {ctx.rc} for a side that failed"
        missing = _words(ctx.out, words)
        if missing:
            tail = ctx.stderr.strip()[-240:]
            return "wrong", f"exit {ctx.rc}: the message does not say {missing}: {tail}"
        return None

    return check
