"""The fault campaign's scenarios of the capacity protocol and of ``streambench ab`` (the command line);
benchmarks/fault_campaign.py runs them. Not a test module."""

from __future__ import annotations

import re
import signal
import subprocess
import time

from fault_campaign import Ctx, Scenario
from fault_campaign_checks import ab_error, cap_failed, cap_ok, clear_error, in_tmpfs, json_alone_ab, write
from fault_campaign_procs import after, once_written, signal_main, signal_worker

CAPACITY_TOML = """streams = 4
confidence = 0.8
target_miss_rate = 0.05
slack_misses = 0
min_point_s = 1.0
budget_s = 60
deadline_ms = 40
"""
CAP = [
    "streambench",
    "run",
    "--protocol",
    "capacity",
    "--protocol-config",
    "capacity.toml",
    "--streams",
    "4",
    "--duration",
    "2",
    "--warmup-frames",
    "10",
    "--output-dir",
    "results",
]
AB = [
    "streambench",
    "ab",
    "--streams",
    "2",
    "--duration",
    "1",
    "--warmup-frames",
    "10",
    "--rounds",
    "2",
    "--budget-s",
    "0",
    "--streams-per-round",
    "1",
]


FAULTY_AT = '[{"fault":"%s","stream_index":%d,"at_frame":3}]'


BATCH_WARMUP_KEYS = 8
"""Batched serving warms up on ``max_batch`` (8) keys at once, each a stream the faulty adapter counts."""


FRAME_FAULTS = ("raise", "nan", "shape", "huge_ref", "exit", "segv", "garbage", "raw", "close_fds",
                "keyboard", "base", "genexit", "sysexit")  # fmt: skip
"""The campaign model's per-frame faults that capacity (both serving modes) and ab are each given."""


def _faulty_cap(fault: str, batched: bool) -> list[str]:
    """The faulty adapter planting ``fault`` at frame 3 of every stream after the warm-up's (one stream
    per replica; in batched mode, its 8 warm-up keys), so the fault comes during the search."""
    first = 1 + (BATCH_WARMUP_KEYS if batched else 0)
    plants = ",".join(FAULTY_AT[1:-1] % (fault, i) for i in range(first, first + 23))
    args = [*CAP, "--adapter", "faulty", "-o", f"more_faults=[{plants}]"]
    return args + (["-o", "max_batch_size=8", "-p", "serving=batched"] if batched else [])


def _remount_ro(ctx: Ctx) -> None:
    assert ctx.proc is not None
    subprocess.run(
        ["nsenter", "-t", str(ctx.proc.pid), "-m", "mount", "-o", "remount,ro", str(ctx.dir / "results")],
        check=False,
    )
    ctx.notes.append("remounted results/ read-only")


def capacity() -> list[Scenario]:
    setup = write("capacity.toml", CAPACITY_TOML)
    out = []
    for batched in (False, True):
        mode = "batched" if batched else "replicas"
        faults = [*FRAME_FAULTS, *(["short", "long", "nothing"] if batched else [])]
        for fault in faults:
            out.append(
                Scenario(
                    f"capacity_{mode}_faulty_{fault}",
                    "capacity",
                    "cli",
                    _faulty_cap(fault, batched),
                    setup=setup,
                    check=cap_failed(),
                )
            )
        out.append(
            Scenario(
                f"capacity_{mode}_faulty_hang_timeout",
                "capacity",
                "cli",
                [*_faulty_cap("hang", batched), "--frame-timeout", "5"],
                setup=setup,
                check=cap_failed("timeout"),
            )
        )
        out.append(
            Scenario(
                f"capacity_{mode}_faulty_leak_limit",
                "capacity",
                "cli",
                [*_faulty_cap("leak", batched), "--memory-limit-mb", "300", "-o", "leak_mb_per_frame=32"],
                setup=setup,
                check=cap_failed(),
            )
        )
        evil = [*CAP, "--adapter", "campaign_models:Evil", "-o", "at_call=40", "--frame-timeout", "5"]
        if batched:
            evil += ["-o", "max_batch_size=8", "-p", "serving=batched"]
        for act, check in (
            ("raise_sysexit_str", cap_failed()),
            ("sig_stop_self", cap_failed()),
            ("ret_str", cap_failed()),
            ("refers_str", cap_failed()),
            ("scores_none", cap_failed()),
            ("print_stdout_mb", cap_ok),
            ("fork", cap_failed("PermissionError")),
            ("raise_base_custom", cap_failed()),
            ("sig_kill_self", cap_failed("SIGKILL")),
        ):
            out.append(
                Scenario(
                    f"capacity_{mode}_evil_{act}",
                    "capacity",
                    "cli",
                    [*evil, "-o", f"act={act}"],
                    setup=setup,
                    check=check,
                )
            )
        base = [*CAP, "--adapter", "busywait", "-o", "duration_us=500", "--frame-timeout", "5"]
        if batched:
            base = [*CAP, "--adapter", "reference", "-p", "serving=batched", "--frame-timeout", "5"]
        out += [
            Scenario(
                f"capacity_{mode}_sigkill_worker",
                "capacity",
                "cli",
                base,
                setup=setup,
                during=signal_worker(signal.SIGKILL, 2.5),
                check=cap_failed("SIGKILL"),
            ),
            Scenario(
                f"capacity_{mode}_sigstop_worker",
                "capacity",
                "cli",
                base,
                setup=setup,
                during=signal_worker(signal.SIGSTOP, 2.5),
                check=cap_failed("timeout"),
            ),
        ]
    good = [*CAP, "--adapter", "busywait", "-o", "duration_us=500"]
    for name, extra, words in (
        ("deadline_zero", ["-p", "deadline_ms=0"], ("deadline_ms",)),
        ("streams_zero", ["-p", "streams=0"], ("streams",)),
        ("serving_bogus", ["-p", "serving=bogus"], ("serving",)),
        ("replicas_zero", ["-p", "replicas=0"], ("replicas",)),
        ("max_batch_zero", ["-p", "max_batch=0"], ("max_batch",)),
        ("unknown_field", ["-p", "bogus=1"], ("bogus",)),
        ("deadline_text", ["-p", "deadline_ms=abc"], ("deadline_ms",)),
        ("flag_negative", ["--deadline-ms", "-5"], ("--deadline-ms",)),
        ("config_missing", ["--protocol-config", "nope.toml"], ("nope.toml",)),
        ("config_syntax", ["--protocol-config", "bad.toml"], ("bad.toml",)),
        ("batch_too_big", ["-p", "serving=batched", "-p", "max_batch=16"], ("max_batch",)),
        ("growth_one", ["-p", "growth=1"], ("growth",)),
        ("budget_tiny", ["--budget-s", "0.001"], ()),
        ("phase_seed_neg", ["-p", "phase_seed=-1"], ("phase_seed",)),
    ):
        ok: tuple[int, ...] = (2,) if words else (0, 1, 2)
        check = clear_error(*words) if words else None
        out.append(
            Scenario(
                f"capacity_config_{name}",
                "capacity",
                "cli",
                [*good, *extra],
                ok=ok,
                check=check,
                setup=lambda d: (setup(d), write("bad.toml", "streams = [\n")(d)),
            )
        )
    out += [
        Scenario(
            "capacity_sigint_mid_search",
            "capacity",
            "cli",
            [*good, "-p", "min_point_s=3"],
            ok=(130, -2),  # -2: ended by SIGINT itself (a shell shows 130 too)
            setup=setup,
            during=once_written("results/*/capacity.json", signal_main(signal.SIGINT)),  # a point decided
            check=_cap_interrupted,
        ),
        Scenario(
            "capacity_sigterm_mid_search",
            "capacity",
            "cli",
            [*good, "-p", "min_point_s=3"],
            ok=(130, 143),
            setup=setup,
            during=once_written("results/*/capacity.json", signal_main(signal.SIGTERM)),
            check=_cap_interrupted,
        ),
        Scenario(
            "capacity_store_readonly_mid_search",
            "capacity",
            "cli",
            in_tmpfs([*good, "-p", "min_point_s=3"]),
            setup=setup,
            during=after(7.0, _remount_ro),
            needs_mount=True,
            check=clear_error("capacity.json", "read-only"),
            ok=(2,),
        ),
        Scenario(
            "capacity_store_full",
            "capacity",
            "cli",
            in_tmpfs(good, "24k"),
            setup=setup,
            needs_mount=True,
            check=clear_error("No space left"),
            ok=(2,),
        ),
        Scenario(
            "capacity_resume_refused",
            "capacity",
            "cli",
            [
                "sh",
                "-c",
                " ".join(good) + " --run-id cap1 >/dev/null 2>&1; streambench run --resume results/cap1",
            ],
            setup=setup,
            ok=(2,),
            check=clear_error("resume"),
        ),
        Scenario("capacity_in_process", "capacity", "cli", [*good, "--in-process"], ok=(0, 2), setup=setup),
    ]
    return out


def _cap_interrupted(ctx: Ctx) -> tuple[str, str] | None:
    result = ctx.json("capacity.json")
    if result is None or (not result["score"].get("curve") and not re.search(r"N = \d", ctx.out)):
        return "lost", "interrupted mid-search: no capacity.json with the points decided before"
    return None


# ----------------------------------------------------------------------------------------------------- ab


def ab() -> list[Scenario]:
    out = []
    for fault in FRAME_FAULTS:
        args = [
            *AB,
            "--base-adapter",
            "faulty",
            "--head-option",
            f"fault={fault}",
            "--head-option",
            "stream_index=1",
            "--head-option",
            "at_frame=5",
        ]
        out.append(Scenario(f"ab_head_faulty_{fault}", "ab", "cli", args, ok=(2,), check=ab_error("head")))
    for act in ("sleep_forever", "ret_str", "sig_stop_self", "print_stdout_mb", "fork", "monkey_time"):
        args = [
            *AB,
            "--base-adapter",
            "campaign_models:Evil",
            "--head-option",
            f"act={act}",
            "--head-option",
            "at_call=15",
        ]
        check = None if act in ("print_stdout_mb", "monkey_time") else ab_error("head")
        out.append(
            Scenario(
                f"ab_head_evil_{act}",
                "ab",
                "cli",
                args,
                ok=(0, 1, 2, 3),
                check=check,
                timeout=300 if "sleep" in act or "stop" in act else 240,
            )
        )
    out.append(
        Scenario(
            "ab_base_evil_init_raise",
            "ab",
            "cli",
            [
                *AB,
                "--base-adapter",
                "campaign_models:Evil",
                "--base-option",
                "act=raise_value",
                "--base-option",
                "where=init",
                "--head-adapter",
                "null",
            ],
            ok=(2,),
            check=ab_error("base"),
        )
    )
    empty = lambda d: (d / "empty").mkdir()  # noqa: E731
    for name, extra, words in (
        ("unknown_adapter", ["--head-adapter", "nope_mod:Nope"], ("nope_mod",)),
        ("fail_on_garbage", ["--fail-on", "p50:+banana"], ("fail",)),
        ("rounds_zero", ["--rounds", "0"], ("rounds",)),
        ("streams_zero", ["--streams", "0"], ("streams",)),
        ("confidence_two", ["--confidence", "2"], ("confidence",)),
        ("mode_bogus", ["--mode", "bogus"], ("mode",)),
        ("config_missing", ["--config", "nope.toml"], ("nope.toml",)),
        ("base_path_missing", ["--base-path", "/nonexistent/checkout"], ("/nonexistent/checkout",)),
        ("base_path_empty", ["--base-path", "empty", "--base-adapter", "campaign_models:Evil"], ("base",)),
        ("base_python_missing", ["--base-python", "/nonexistent/python3"], ("/nonexistent/python3",)),
        ("base_python_false", ["--base-python", "/bin/false"], ("base",)),
        ("option_unknown", ["--head-option", "bogus=1"], ("bogus",)),
        ("duration_negative", ["--duration", "-1"], ("duration",)),
    ):
        out.append(
            Scenario(
                f"ab_config_{name}",
                "ab",
                "cli",
                [*AB, *extra],
                ok=(2,),
                check=clear_error(*words),
                setup=empty,
            )
        )
    longer = [*AB[:-6], "--rounds", "6", "--budget-s", "0"]
    out += [
        Scenario(
            "ab_sigkill_worker",
            "ab",
            "cli",
            longer,
            ok=(2,),
            during=signal_worker(signal.SIGKILL, 1.0),
            check=ab_error("SIGKILL"),
        ),
        Scenario(
            "ab_sigstop_worker",
            "ab",
            "cli",
            longer,
            ok=(2,),
            during=signal_worker(signal.SIGSTOP, 1.0),
            check=ab_error(),
            timeout=420,  # stopped while it starts: ended at the start timeout (300 s), as a slow start is
        ),
        Scenario("ab_sigint", "ab", "cli", longer, ok=(130,), during=after(8.0, signal_main(signal.SIGINT))),
        Scenario(
            "ab_sigterm", "ab", "cli", longer, ok=(130, 143), during=after(8.0, signal_main(signal.SIGTERM))
        ),
        Scenario(
            "ab_sigint_twice",
            "ab",
            "cli",
            longer,
            ok=(130,),
            during=after(
                6.0, lambda c: (signal_main(signal.SIGINT)(c), time.sleep(0.3), signal_main(signal.SIGINT)(c))
            ),
        ),
        Scenario(
            "ab_json_with_noisy_model",
            "ab",
            "cli",
            [
                *AB,
                "--json",
                "--base-adapter",
                "campaign_models:Evil",
                "--head-option",
                "act=print_stdout_mb",
                "--head-option",
                "arg=1",
                "--head-option",
                "at_call=15",
            ],
            ok=(0, 1, 3),
            check=json_alone_ab,
        ),
    ]
    return out


def scenarios() -> list[Scenario]:
    return capacity() + ab()
