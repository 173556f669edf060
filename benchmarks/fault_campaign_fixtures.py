"""The fault campaign's scenarios of the pytest fixtures (``streambench_latency``, ``streambench_ab``) in a
user's test file, run by ``python -m pytest``; benchmarks/fault_campaign.py runs them. Not a test module."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path

from fault_campaign import Check, Ctx, Scenario
from fault_campaign_checks import write
from fault_campaign_procs import after, signal_main

LATENCY = """
def test_it(streambench_latency):
    run = streambench_latency({args})
    assert run.latency.n > 0
"""
AB_TEST = """
def test_it(streambench_ab):
    report = streambench_ab({args})
    assert report.verdict == "no regression"
"""


def pytest_case(template: str, args: str) -> tuple[list[str], Callable[[Path], None]]:
    plugins = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]  # hypothesis: slow to import, unused
    argv = [sys.executable, "-m", "pytest", "-q", *plugins, "-rA", "test_case.py"]
    return argv, write("test_case.py", template.format(args=args))


def pytest_outcome(expect: str, *words: str) -> Check:
    """``expect``: 'pass' (pytest exit 0) or 'fail' (exit 1, a test failure naming ``words``, no
    INTERNALERROR, no exception type of streambench's internals)."""

    def check(ctx: Ctx) -> tuple[str, str] | None:
        if "INTERNALERROR" in ctx.out:
            return "traceback", "pytest INTERNALERROR"
        if expect == "pass":
            return None if ctx.rc == 0 else ("wrong", f"pytest exit {ctx.rc}: {ctx.out.strip()[-200:]}")
        summary = [x for x in ctx.out.splitlines() if x.startswith(("FAILED", "ERROR"))]
        if ctx.rc != 1 or not summary:
            return "wrong", f"pytest exit {ctx.rc}: {ctx.out.strip()[-200:]}"
        for internal in ("AttributeError", "KeyError", "IndexError", "UnboundLocalError", "NameError"):
            if internal in summary[0]:
                return "traceback", summary[0][:200]
        missing = [w for w in words if w.lower() not in ctx.out.lower()]
        if missing:
            return "wrong", f"the failure does not say {missing}: {summary[0][:200]}"
        return None

    return check


def pytest_scenarios() -> list[Scenario]:
    small = "streams=2, duration_s=1.0, warmup_frames=10"
    cases = [
        ("latency_ok", LATENCY, f'adapter="null", {small}', "pass", ()),
        (
            "latency_faulty_raise",
            LATENCY,
            f'adapter="faulty", options={{"fault": "raise", "stream_index": 1, "at_frame": 3}}, {small}',
            "fail",
            ("frame 3",),
        ),
        (
            "latency_faulty_sysexit",
            LATENCY,
            f'adapter="faulty", options={{"fault": "sysexit", "stream_index": 1, "at_frame": 3}}, {small}',
            "fail",
            ("frame 3",),
        ),
        (
            "latency_faulty_keyboard",
            LATENCY,
            f'adapter="faulty", options={{"fault": "keyboard", "stream_index": 1, "at_frame": 3}}, {small}',
            "fail",
            ("frame 3",),
        ),
        ("latency_unknown_adapter", LATENCY, f'adapter="no_such_mod:X", {small}', "fail", ("no_such_mod",)),
        ("latency_streams_zero", LATENCY, 'adapter="null", streams=0', "fail", ("streams",)),
        (
            "latency_bad_option",
            LATENCY,
            f'adapter="null", options={{"bogus": 1}}, {small}',
            "fail",
            ("bogus",),
        ),
        (
            "latency_init_raises",
            LATENCY,
            f'adapter="campaign_models:Evil", options={{"act": "raise_value", "where": "init"}}, {small}',
            "fail",
            ("evil",),
        ),
        ("ab_config_missing", AB_TEST, 'config="nope.toml"', "fail", ("nope.toml",)),
        (
            "ab_head_raises",
            AB_TEST,
            'adapter="faulty", base_adapter="faulty", base_options={}, options={"fault": "raise", '
            '"stream_index": 1, "at_frame": 3}, streams=2, duration_s=1.0, warmup_frames=10, rounds=2, '
            "budget_s=None",
            "fail",
            ("head",),
        ),
        (
            "ab_base_path_empty",
            AB_TEST,
            'adapter="campaign_models:Evil", streams=2, duration_s=1.0, rounds=2, budget_s=None',
            "fail",
            ("base",),
        ),
        (
            "ab_bad_fail_on",
            AB_TEST,
            'adapter="null", fail_on="p50:+banana", streams=2, duration_s=1.0',
            "fail",
            ("fail",),
        ),
        ("ab_unknown_argument", AB_TEST, 'adapter="null", bogus=1', "fail", ("bogus",)),
    ]
    out = []
    for name, template, args, expect, words in cases:
        argv, setup = pytest_case(template, args)
        if name == "ab_base_path_empty":
            argv = [*argv, "--streambench-base-path", "empty"]
            setup = (lambda s: lambda d: (s(d), (d / "empty").mkdir()))(setup)
        out.append(
            Scenario(
                f"pytest_{name}",
                "pytest",
                "pytest",
                argv,
                ok=(0, 1),
                setup=setup,
                check=pytest_outcome(expect, *words),
            )
        )
    argv, setup = pytest_case(
        LATENCY, 'adapter="busywait", options={"duration_us": 20000}, streams=6, duration_s=2.0'
    )
    out.append(
        Scenario(
            "pytest_sigint",
            "pytest",
            "pytest",
            argv,
            ok=(1, 2, 130),
            setup=setup,
            during=after(8.0, signal_main(signal.SIGINT)),
        )
    )
    return out


def scenarios() -> list[Scenario]:
    return pytest_scenarios()
