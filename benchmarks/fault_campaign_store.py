"""The fault campaign's scenarios of the run store (damaged, full or read-only; resumed, shown, reported);
benchmarks/fault_campaign.py runs them. Not a test module."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from fault_campaign import Check, Ctx, Scenario
from fault_campaign_checks import clean, clear_error, in_tmpfs

RUN = [
    "streambench",
    "run",
    "--streams",
    "3",
    "--duration",
    "1",
    "--warmup-frames",
    "10",
    "--output-dir",
    "results",
]

# ---------------------------------------------------------------------------------------------- the store

_TEMPLATE: dict[str, Path] = {}


def _prepared(base: Path) -> Path:
    """A store with a complete run ``r1`` (null, 3 streams) and an interrupted one ``r2`` (busywait, 2 or 3
    of 8 streams logged), made once per campaign and copied into each store scenario."""
    with _PREPARING:
        return _prepare(base.parent / "_store_template")


_PREPARING = threading.Lock()


def _prepare(template: Path) -> Path:
    if (template / "results" / "r2" / "events.jsonl").is_file():
        return template
    shutil.rmtree(template, ignore_errors=True)
    template.mkdir(parents=True)
    shutil.copy(Path(__file__).with_name("fault_campaign_models.py"), template / "campaign_models.py")
    subprocess.run(
        [*RUN, "--adapter", "null", "--run-id", "r1", "--no-progress"], cwd=template, capture_output=True
    )
    proc = subprocess.Popen(
        [
            *RUN[:3],
            "8",
            *RUN[4:],
            "--adapter",
            "busywait",
            "-o",
            "duration_us=40000",
            "--run-id",
            "r2",
            "--no-progress",
        ],
        cwd=template,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    events = template / "results" / "r2" / "events.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if events.is_file() and events.read_text().count('"stream_id"') >= 2:
            break
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    return template


def store(damage: Callable[[Path], None] | None = None) -> Callable[[Path], None]:
    def setup(directory: Path) -> None:
        shutil.copytree(_prepared(directory) / "results", directory / "results")
        if damage is not None:
            damage(directory / "results")

    return setup


def truncate(rel: str, keep: float = 0.5) -> Callable[[Path], None]:
    def damage(results: Path) -> None:
        data = (results / rel).read_bytes()
        (results / rel).write_bytes(data[: int(len(data) * keep)])

    return damage


def edit_json(rel: str, edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def damage(results: Path) -> None:
        doc = json.loads((results / rel).read_text())
        edit(doc)
        (results / rel).write_text(json.dumps(doc))

    return damage


def edit_lines(rel: str, edit: Callable[[list[str]], list[str]]) -> Callable[[Path], None]:
    def damage(results: Path) -> None:
        lines = (results / rel).read_text().splitlines()
        (results / rel).write_text("\n".join(edit(lines)) + "\n")

    return damage


def _resumed(ctx: Ctx) -> tuple[str, str] | None:
    result = ctx.json("result.json")
    if ctx.rc != 0:
        return (
            None if ctx.rc == 2 and "r2" in ctx.out else ("wrong", f"resume exit {ctx.rc}: {ctx.out[-200:]}")
        )
    if result is None or result["scored"]["scored_streams"] != 8:
        return "lost", f"resumed result scores {result and result['scored']['scored_streams']} of 8 streams"
    return None


def reported(file: str) -> Check:
    """``report`` of a run with a broken part: exit 0 and a page saying what it could not show, naming
    ``file``."""

    def check(ctx: Ctx) -> tuple[str, str] | None:
        page = ctx.dir / "out.html"
        text = page.read_text(errors="replace") if page.is_file() else ""
        if ctx.rc != 0 or f"{file}:" not in text or "Not shown" not in text:
            return "wrong", f"exit {ctx.rc}: the report does not say what of {file} it could not show"
        return None

    return check


def sh(*commands: str) -> list[str]:
    return ["sh", "-c", "; ".join(commands)]


def store_scenarios() -> list[Scenario]:
    show, runs = "streambench show r1", "streambench runs"
    resume = "streambench run --resume results/r2 --no-progress"
    fsize = (
        'python -c "import os,resource,sys; resource.setrlimit(resource.RLIMIT_FSIZE, (60000, 60000)); '
        'os.execvp(sys.argv[1], sys.argv[1:])" '
    )
    cases: list[tuple[str, list[str], Callable[[Path], None] | None, tuple[int, ...], Check | None]] = [
        ("readonly_results", in_tmpfs(RUN, ro=True), None, (2,), clear_error("results", "read-only")),
        ("tmpfs_tiny", in_tmpfs(RUN, "16k"), None, (2,), clear_error("No space left")),
        ("tmpfs_small", in_tmpfs(RUN, "200k"), None, (0, 2), None),
        ("fsize_limit", sh(fsize + " ".join(RUN)), None, (2,), clear_error("results")),
        (
            "index_garbage_runs",
            sh(runs),
            lambda r: (r / "index.sqlite").write_bytes(b"garbage" * 100),
            (0,),
            None,
        ),
        ("index_garbage_run", RUN, lambda r: (r / "index.sqlite").write_bytes(b"garbage" * 100), (0,), clean),
        (
            "index_garbage_show",
            sh(show),
            lambda r: (r / "index.sqlite").write_bytes(b"\0" * 4096),
            (0,),
            None,
        ),
        (
            "index_is_dir",
            sh(runs),
            lambda r: ((r / "index.sqlite").unlink(), (r / "index.sqlite").mkdir()),
            (0,),
            None,
        ),
        (
            "result_truncated_show",
            sh(show),
            truncate("r1/result.json"),
            (2,),
            clear_error("r1", "result.json"),
        ),
        ("result_truncated_runs", sh(runs), truncate("r1/result.json"), (0,), None),
        (
            "result_truncated_report",
            sh("streambench report r1 -o out.html"),
            truncate("r1/result.json"),
            (0,),
            reported("result.json"),  # a broken part: a reason in the report (catalog.py)
        ),
        (
            "result_truncated_compare",
            sh("streambench compare r1 r1"),
            truncate("r1/result.json"),
            (2,),
            clear_error("result.json"),
        ),
        (
            "result_empty_show",
            sh(show),
            lambda r: (r / "r1" / "result.json").write_text(""),
            (2,),
            clear_error("result.json"),
        ),
        (
            "result_metrics_str",
            sh(show),
            edit_json("r1/result.json", lambda d: d.update(metrics="x")),
            (2,),
            clear_error("result.json"),
        ),
        (
            "result_schema_999",
            sh(show),
            edit_json("r1/result.json", lambda d: d.update(schema_version=999)),
            (2,),
            clear_error("999"),
        ),
        (
            "result_is_dir",
            sh(show),
            lambda r: ((r / "r1" / "result.json").unlink(), (r / "r1" / "result.json").mkdir()),
            (2,),
            clear_error("result.json"),
        ),
        (
            "result_scored_negative_report",
            sh("streambench report r1 -o out.html"),
            edit_json("r1/result.json", lambda d: d["scored"].update(scored_frames=-5)),
            (0, 2),
            None,
        ),
        (
            "arrays_truncated_report",
            sh("streambench report r1 -o out.html"),
            truncate("r1/arrays.npz"),
            (0,),
            reported("arrays.npz"),  # a broken part: a reason in the report (catalog.py)
        ),
        (
            "arrays_missing_report",
            sh("streambench report r1 -o out.html"),
            lambda r: (r / "r1" / "arrays.npz").unlink(),
            (0, 2),
            None,
        ),
        ("run_dir_deleted_runs", sh(runs, show), lambda r: shutil.rmtree(r / "r1"), (2,), clear_error("r1")),
        ("show_incomplete", sh("streambench show r2"), None, (0, 2), None),
        ("events_truncated_resume", sh(resume), truncate("r2/events.jsonl", 0.9), (0, 2), _resumed),
        (
            "events_garbage_line_resume",
            sh(resume),
            edit_lines("r2/events.jsonl", lambda ls: [*ls[:2], "{garbage", *ls[2:]]),
            (0, 2),
            _resumed,
        ),
        (
            "events_missing_resume",
            sh(resume),
            lambda r: (r / "r2" / "events.jsonl").unlink(),
            (2,),
            clear_error("r2"),
        ),
        (
            "events_empty_resume",
            sh(resume),
            lambda r: (r / "r2" / "events.jsonl").write_text(""),
            (2,),
            clear_error("r2"),
        ),
        (
            "events_config_edited_resume",
            sh(resume),
            edit_lines("r2/events.jsonl", lambda ls: [ls[0].replace('"busywait"', '"no_mod:Nope"'), *ls[1:]]),
            (2,),
            clear_error("no_mod"),
        ),
        (
            "events_duplicate_stream_resume",
            sh(resume),
            edit_lines("r2/events.jsonl", lambda ls: [*ls, ls[-1]]),
            (0,),
            _resumed,
        ),
        (
            "events_binary_resume",
            sh(resume),
            lambda r: (r / "r2" / "events.jsonl").write_bytes(os.urandom(4096)),
            (2,),
            clear_error("r2"),
        ),
        ("resume_finished", sh("streambench run --resume results/r1"), None, (0,), None),
        (
            "resume_not_a_run",
            sh("streambench run --resume results/nothing"),
            None,
            (2,),
            clear_error("nothing"),
        ),
        (
            "resume_a_file",
            sh("streambench run --resume results/r1/result.json"),
            None,
            (2,),
            clear_error("result.json"),
        ),
        ("resume_concurrent", sh(f"{resume} > a.txt 2>&1 & {resume}; wait"), None, (0, 2), _one_holder),
        (
            "same_run_id_concurrent",
            ["sh", "-c", f"{' '.join(RUN)} --run-id same > a.txt 2>&1 & {' '.join(RUN)} --run-id same; wait"],
            None,
            (0, 2),
            _one_holder,
        ),
        ("run_id_traversal", [*RUN, "--run-id", "../escape"], None, (2,), clear_error("run")),
        ("run_id_absolute", [*RUN, "--run-id", "/tmp/escape"], None, (2,), clear_error("run")),
        (
            "output_dir_is_file",
            sh("touch afile", " ".join(RUN[:-2]) + " --output-dir afile"),
            None,
            (2,),
            clear_error("afile"),
        ),
        ("show_unknown", sh("streambench show nope"), None, (2,), clear_error("nope")),
        ("runs_no_store", sh("streambench runs --results-dir nowhere"), None, (2,), clear_error("nowhere")),
        (
            "sigkill_then_resume",
            sh(
                " ".join(RUN[:3])
                + " 6 --duration 2 "
                + " ".join(RUN[6:])
                + " --adapter busywait -o duration_us=40000 --run-id rk --no-progress > a.txt 2>&1 & P=$!",
                "sleep 10",
                "kill -9 $P",
                "wait",
                "streambench run --resume results/rk --no-progress",
            ),
            None,
            (0,),
            _resumed_rk,
        ),
        ("reindex_damaged", sh("streambench reindex"), truncate("r1/result.json"), (0, 1, 2), None),
    ]
    out = []
    for name, argv, damage, ok, check in cases:
        out.append(
            Scenario(
                f"store_{name}",
                "store",
                "cli",
                argv,
                ok=ok,
                check=check,
                setup=store(damage),
                needs_mount=argv[0] == "unshare",
            )
        )
    return out


def _one_holder(ctx: Ctx) -> tuple[str, str] | None:
    other = (ctx.dir / "a.txt").read_text(errors="replace") if (ctx.dir / "a.txt").is_file() else ""
    both = ctx.out + other
    if "pid" not in both.lower():
        return "wrong", "two writers of one run directory: neither names the holder"
    return None


def _resumed_rk(ctx: Ctx) -> tuple[str, str] | None:
    result = ctx.json("result.json")
    if ctx.rc != 0 or result is None or result["scored"]["scored_streams"] != 6:
        return "lost", f"resume after SIGKILL: exit {ctx.rc}, {result and result['scored']}"
    return None


def scenarios() -> list[Scenario]:
    return store_scenarios()
