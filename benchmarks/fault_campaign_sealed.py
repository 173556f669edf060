"""The fault campaign's scenarios of the sealed worker (``streambench run`` with a misbehaving model);
benchmarks/fault_campaign.py runs them. Not a test module."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fault_campaign import Check, Ctx, Scenario
from fault_campaign_checks import clean, clear_error, either, json_alone, names, no_escape_codes, recorded

SMALL = ["--streams", "3", "--duration", "1", "--warmup-frames", "10", "--output-dir", "results"]
RUN = ["streambench", "run", *SMALL, "--frame-timeout", "10"]
EVIL = [*RUN, "--adapter", "campaign_models:Evil"]

MUST_FAIL = names("""ret_str ret_dict ret_int ret_true ret_ndarray ret_list_mixed scores_none scores_str
scores_0d scores_empty scores_inf scores_neg_inf scores_1e39 scores_object scores_no_array scores_huge
refers_neg refers_future refers_nan refers_str refers_uint64_max refers_min_int64""")
"""Wrong outputs that must be a recorded failure."""
MAY_PASS = names("""ret_tuple ret_generator ret_10k_predictions scores_list scores_int64 scores_bool scores_2d
scores_complex refers_float features_str weights_object""")
"""Outputs the contract may accept (converted) or refuse: either is clear."""
EXCEPTIONS = names("""raise_value raise_memory raise_keyboard raise_sysexit_1 raise_sysexit_str raise_genexit
raise_stopiteration raise_base_custom raise_unprintable raise_unpicklable raise_huge_message raise_group
raise_recursion""")
EITHER = names("""recursionlimit_tiny print_stdout_mb print_stderr_mb write_fd1_mb write_fd2_mb close_fd0
close_fd1 close_fd2 sys_stdout_none thread_bomb thread_spin thread_nondaemon thread_raises atexit_hang
sig_int_self setsid monkey_numpy monkey_time monkey_json monkey_pickle sys_modules_clear rlimit_nofile""")
"""Behaviours after which an accepted run or a recorded failure are both clear."""
CLEAN = names("""sig_ignore_term sig_parent_term sig_parent_stop chdir umask env gc_freeze
read_proc_parent_environ read_proc_parent_cmdline read_proc_1_environ read_proc_parent_mem""")
"""Behaviours that must change nothing: the sandbox denies them, or they harm only the model."""
BEHAVIOURS: dict[str, Check] = {
    **dict.fromkeys(EITHER, either),
    **dict.fromkeys(CLEAN, clean),
    **dict.fromkeys(
        names("devnull_over_all forge_reply shutdown_sockets subprocess multiprocessing"), recorded()
    ),
    **dict.fromkeys(names("double_fork alloc_huge sig_stop_self"), recorded()),
    "fork": recorded("PermissionError"),
    "sig_term_self": recorded("SIGTERM"),
    "sig_kill_self": recorded("SIGKILL"),
    "sig_usr1_self": recorded("SIGUSR1"),
    "sig_alarm_self": recorded("SIGALRM"),
    "sig_group_term": recorded("SIGTERM"),
    "sleep_forever": recorded("timeout"),
    "busy_forever": recorded("timeout"),
}
"""Acts at call 15 (frame 5 of the first scored stream) -> what a clear outcome is."""


def _git_head() -> str:
    """The harness checkout's ``.git/HEAD`` (or its ``.git`` file, in a worktree)."""
    import streambench

    git = Path(streambench.__file__).resolve().parents[1] / ".git"
    return str(git / "HEAD" if git.is_dir() else git)


READS = {  # what a sealed model may not read or write (act=read_path/list_path/write_path, arg)
    "read_store": ("read_path", "{dir}/results/secret.txt"),
    "list_store": ("list_path", "{dir}/results"),
    "read_git": ("read_path", _git_head()),
    "read_etc_shadow": ("read_path", "/etc/shadow"),
    "list_campaign": ("list_path", "{dir}/.."),
    "read_other_scenario": ("read_path", "{dir}/../sealed_read_store/results/secret.txt"),
    "write_cwd": ("write_path", "{dir}/canary.txt"),
    "write_store": ("write_path", "{dir}/results/canary.txt"),
    "write_tmp": ("write_path", "/tmp/campaign-canary-write_tmp"),
}


def _store_secret(directory: Path) -> None:
    (directory / "results").mkdir()
    (directory / "results" / "secret.txt").write_text("a stored result\n")


def _tmp_canary(ctx: Ctx) -> tuple[str, str] | None:
    path = Path("/tmp/campaign-canary-write_tmp")
    if path.exists():
        path.unlink()
        return "escape", "the model wrote /tmp/campaign-canary-write_tmp"
    return clean(ctx)


def _target(path: str) -> Callable[[Path], None]:
    def setup(directory: Path) -> None:
        _store_secret(directory)
        (directory / "campaign_target.txt").write_text(path.replace("{dir}", str(directory)))

    return setup


def evil(name: str, act: str, check: Check, *extra: str, **kw: object) -> Scenario:
    """``run`` of the campaign's model committing ``act`` at its 15th call (frame 5 of the first scored
    stream), with ``extra`` options."""
    argv = [*EVIL, "-o", f"act={act}", "-o", "at_call=15", *extra]
    return Scenario(f"sealed_{name}", "sealed", "cli", argv, check=check, **kw)  # type: ignore[arg-type]


def sealed() -> list[Scenario]:
    out = [evil(name, name, recorded()) for name in [*MUST_FAIL, *EXCEPTIONS]]
    out += [evil(name, name, either) for name in MAY_PASS]
    out.append(evil("raise_markup", "raise_markup", no_escape_codes(recorded("markup"))))
    out += [evil(name, name, check) for name, check in BEHAVIOURS.items()]
    limited = ["--memory-limit-mb", "400"]
    out += [
        evil("alloc_grow_limited", "alloc_grow", recorded(), *limited, "-o", "arg=600"),
        evil("bytearray_huge_limited", "bytearray_huge", recorded(), *limited),
        evil("print_stdout_json", "print_stdout_mb", json_alone, "--json", "-o", "arg=2",
             note="--json prints JSON alone although the model prints"),
    ]  # fmt: skip
    for name, (act, arg) in READS.items():
        check = _tmp_canary if name == "write_tmp" else clean
        out.append(evil(name, act, check, "-o", "arg=@", setup=_target(arg)))
    for where, act, check in (
        ("reset", "sleep_forever", recorded("timeout", frame=None)),
        ("reset", "raise_value", recorded(frame=None)),
        ("reset", "sig_kill_self", recorded(frame=None)),
        ("init", "raise_value", clear_error("evil", "ValueError")),
        ("init", "sleep_forever", clear_error("evil")),
        ("info", "raise_value", clear_error("evil", "ValueError")),
        ("init", "print_stdout_mb", clean),
        ("init", "fork", clear_error("evil")),
        ("init", "raise_sysexit_1", clear_error("evil")),
        ("reset", "raise_keyboard", recorded(frame=None)),
    ):
        # a constructor that never returns is ended at the start timeout (300 s), as a slow start is
        wait = 400.0 if (where, act) == ("init", "sleep_forever") else 240.0
        out.append(evil(f"{where}_{act}", act, check, "-o", f"where={where}", ok=(0, 1, 2), timeout=wait))
    for name in ("read_store", "write_cwd"):
        act, arg = READS[name]
        argv = [*EVIL, "-o", f"act={act}", "-o", f"arg={arg}"]
        note = "the path in the options: refused or denied"
        out.append(
            Scenario(f"sealed_{name}_named", "sealed", "cli", argv, setup=_store_secret, ok=(0, 2), note=note)
        )
    faults = names("""raise nan shape hang exit segv leak huge_ref garbage raw close_fds keyboard base genexit
    sysexit short long nothing none""")
    planted = ["--adapter", "faulty", "-o", "stream_index=1", "-o", "at_frame=5"]
    for fault in faults:
        args = [*RUN, *planted, "-o", f"fault={fault}"]
        if fault == "leak":
            args += ["--memory-limit-mb", "300", "-o", "leak_mb_per_frame=64"]
        check = clean if fault in ("short", "long", "nothing", "none") else recorded()
        out.append(Scenario(f"sealed_faulty_{fault}", "sealed", "cli", args, check=check))
    for mode in ("--in-process", "--no-sealed"):
        for fault in ("raise", "sysexit", "keyboard", "base", "genexit", "huge_ref", "nan"):
            args = ["streambench", "run", mode, *SMALL, *planted, "-o", f"fault={fault}"]
            name = f"sealed_faulty_{fault}{mode.replace('-', '_')}"
            check = interrupted if (mode, fault) == ("--in-process", "keyboard") else recorded()
            out.append(Scenario(name, "sealed", "cli", args, check=check, ok=(1, 130)))
    return out


def interrupted(ctx: Ctx) -> tuple[str, str] | None:
    """In process, a model's ``KeyboardInterrupt`` cannot be told from Ctrl-C and interrupts the run, what
    was measured kept (docs/adapters.md): exit 130 and the message saying how to finish the run."""
    if ctx.rc == 130 and "interrupted (KeyboardInterrupt)" in ctx.out and "--resume" in ctx.out:
        return None
    return "wrong", f"exit {ctx.rc}: {ctx.out.strip()[-200:]}"


def scenarios() -> list[Scenario]:
    return sealed()
