"""The fault campaign's scenarios of the Python API (``streambench.run``, ``streambench.ab``);
benchmarks/fault_campaign.py runs them. Not a test module."""

from __future__ import annotations

import json
import signal
import time

from fault_campaign import Check, Ctx, Scenario, python_code
from fault_campaign_procs import after, signal_main

# ------------------------------------------------------------------------------------------------- the API

API = """
import json, signal, sys, threading, time
def report(**kw): print("CAMPAIGN " + json.dumps(kw, default=str), flush=True)
import streambench
CFG = {"adapter": "null", "data": {"kind": "synthetic", "num_streams": 3, "duration_s": 1.0},
       "engine": {"warmup_frames": 10}, "output_dir": "results"}
def attempt(fn):
    try:
        out = fn()
    except BaseException as exc:
        report(exc=type(exc).__name__, mro=[c.__name__ for c in type(exc).__mro__], msg=str(exc)[:400])
    else:
        report(exc=None, value=repr(out)[:200])
"""


def api(code: str) -> list[str]:
    return python_code(API + code)


def raises(kind: str, *words: str) -> Check:
    """The API raised ``kind`` (or a subclass) naming ``words``."""

    def check(ctx: Ctx) -> tuple[str, str] | None:
        got = ctx.api()
        if not got:
            return "wrong", f"exit {ctx.rc}, nothing reported: {ctx.stderr.strip()[-200:]}"
        if got.get("exc") is None:
            return "wrong", f"no {kind} raised: returned {got.get('value')}"
        if kind not in got.get("mro", []):
            return "traceback", f"{got['exc']} where {kind} is documented: {got['msg'][:160]}"
        missing = [w for w in words if w.lower() not in got["msg"].lower()]
        if missing:
            return "wrong", f"{got['exc']} does not say {missing}: {got['msg'][:160]}"
        return None

    return check


def returned(ctx: Ctx) -> tuple[str, str] | None:
    got = ctx.api()
    if got.get("exc") is not None or not got:
        return "wrong", f"{got.get('exc')}: {str(got.get('msg'))[:160]}"
    return None


def _interrupted_loop(ctx: Ctx) -> tuple[str, str] | None:
    got = ctx.api()
    if got.get("exc") != "KeyboardInterrupt":
        return "wrong", f"Ctrl-C in a loop of run(): {got or ctx.stderr.strip()[-160:]}"
    if got.get("runs_done", 0) >= 3:
        return "wrong", "the loop went on after Ctrl-C"
    return None


LOOP = """
done = 0
try:
    for i in range(3):
        print("starting", i, flush=True)
        streambench.run(dict(CFG, adapter="busywait", adapter_options={"duration_us": 20000},
                             data={"kind": "synthetic", "num_streams": 6, "duration_s": 2.0}))
        done += 1
except BaseException as exc:
    report(exc=type(exc).__name__, msg=str(exc)[:300], runs_done=done)
else:
    report(exc=None, runs_done=done)
"""


def api_scenarios() -> list[Scenario]:
    out = []
    for name, call, kind, words in (
        ("run_str", 'streambench.run("x")', "TypeError", ("config",)),
        ("run_none", "streambench.run(None)", "TypeError", ("config",)),
        ("run_int", "streambench.run(42)", "TypeError", ("config",)),
        ("run_list_pairs", 'streambench.run([("adapter", "null")])', "TypeError", ("config",)),
        ("run_unknown_field", "streambench.run(dict(CFG, bogus=1))", "ValueError", ("bogus",)),
        ("run_adapter_int", "streambench.run(dict(CFG, adapter=5))", "ValueError", ("adapter",)),
        (
            "run_missing_module",
            'streambench.run(dict(CFG, adapter="no_such_mod:X"))',
            "ValueError",
            ("no_such_mod",),
        ),
        (
            "run_unknown_option",
            'streambench.run(dict(CFG, adapter_options={"nope": 1}))',
            "ValueError",
            ("nope",),
        ),
        ("run_unknown_protocol", 'streambench.run(CFG, protocol="nope")', "ValueError", ("nope",)),
        (
            "run_protocol_config_str",
            'streambench.run(CFG, protocol_config="x")',
            "ValueError",
            ("protocol_config",),
        ),
        ("run_progress_not_callable", 'streambench.run(CFG, progress="x")', "TypeError", ("progress",)),
        (
            "run_data_kind_bogus",
            'streambench.run(dict(CFG, data={"kind": "bogus"}))',
            "ValueError",
            ("kind",),
        ),
        (
            "run_streams_zero",
            'streambench.run(dict(CFG, data={"kind": "synthetic", "num_streams": 0}))',
            "ValueError",
            ("num_streams",),
        ),
        (
            "run_output_dir_file",
            'open("afile", "w").close(); streambench.run(dict(CFG, output_dir="afile"))',
            "ValueError",
            ("afile",),
        ),
        ("run_run_id_traversal", 'streambench.run(dict(CFG, run_id="../x"))', "ValueError", ("run_id",)),
        (
            "run_mapping_subclass_bad",
            "import collections; streambench.run(collections.OrderedDict(adapter=[]))",
            "ValueError",
            ("adapter",),
        ),
        (
            "run_init_raises",
            'streambench.run(dict(CFG, adapter="campaign_models:Evil", '
            'adapter_options={"act": "raise_value", "where": "init"}))',
            "ValueError",
            ("evil",),
        ),
        (
            "run_in_process_init_raises",
            'streambench.run(dict(CFG, adapter="campaign_models:Evil", isolate=False, '
            'adapter_options={"act": "raise_value", "where": "init"}))',
            "ValueError",
            ("evil",),
        ),
        (
            "run_capacity_wrong_config",
            "from streambench.protocols.online import OnlineConfig; "
            'streambench.run(CFG, protocol="capacity", protocol_config=OnlineConfig())',
            "ValueError",
            ("capacity",),
        ),
        ("ab_str", 'streambench.ab("x", CFG)', "TypeError", ("base",)),
        ("ab_none_head", "streambench.ab(CFG, None)", "TypeError", ("head",)),
        ("ab_rounds_str", 'streambench.ab(CFG, CFG, rounds="x")', "TypeError", ("rounds",)),
        ("ab_fail_on_garbage", 'streambench.ab(CFG, CFG, fail_on="garbage")', "ValueError", ("garbage",)),
        ("ab_on_bogus", 'streambench.ab(CFG, CFG, on="bogus")', "ValueError", ("on",)),
        ("ab_confidence_two", "streambench.ab(CFG, CFG, confidence=2)", "ValueError", ("confidence",)),
        (
            "ab_missing_module",
            'streambench.ab(CFG, dict(CFG, adapter="no_such_mod:X"))',
            "ValueError",
            ("no_such_mod",),
        ),
        (
            "ab_head_raises",
            'streambench.ab(CFG, dict(CFG, adapter="faulty", adapter_options={"fault": "raise", '
            '"stream_index": 1, "at_frame": 3}), streambench.RoundsConfig(rounds=2, budget_s=None, '
            "streams_per_round=1))",
            "AdapterError",  # ab stops at a side's adapter failure and raises it (docs/python.md)
            ("head",),
        ),
    ):
        out.append(
            Scenario(
                f"api_{name}",
                "api",
                "api",
                api(f"attempt(lambda: exec({call!r}))" if ";" in call else f"attempt(lambda: {call})"),
                ok=(0,),
                check=raises(kind, *words),
            )
        )
    for fault in ("raise", "sysexit", "keyboard", "base", "genexit"):
        for isolate in (True, False):
            body = (  # a function, not exec() of a string: CPython 3.11 then ends the process by SIGINT
                "def go():\n"  # once a KeyboardInterrupt left the exec'd code, caught or not
                f'    out = streambench.run(dict(CFG, adapter="faulty", isolate={isolate}, adapter_options='
                f'{{"fault": "{fault}", "stream_index": 1, "at_frame": 5}}))\n'
                f"    report(exc=None, failures={RECORDED}, run_dir=str(out.run_dir))\n"
                "attempt(go)"
            )
            name = f"api_faulty_{fault}_{'sealed' if isolate else 'in_process'}"
            check = _api_interrupted if (fault, isolate) == ("keyboard", False) else _api_recorded
            argv = api(body)
            out.append(Scenario(name, "api", "api", argv, ok=(0,), check=check))
    out += [
        Scenario(
            "api_sigint_loop_streams",
            "api",
            "api",
            api(LOOP),
            ok=(0, 1, 130),
            check=_interrupted_loop,
            during=after(9.0, signal_main(signal.SIGINT)),
        ),
        Scenario(
            "api_sigint_loop_start",
            "api",
            "api",
            api(LOOP),
            ok=(0, 1, 130),
            check=_interrupted_loop,
            during=after(2.5, signal_main(signal.SIGINT)),
        ),
        Scenario(
            "api_sigint_loop_twice",
            "api",
            "api",
            api(LOOP),
            ok=(0, 1, 130),
            check=_interrupted_loop,
            during=after(
                8.0, lambda c: (signal_main(signal.SIGINT)(c), time.sleep(0.2), signal_main(signal.SIGINT)(c))
            ),
        ),
        Scenario(
            "api_sigterm_loop",
            "api",
            "api",
            api(LOOP),
            ok=(0, 1, 130, 143, -15),
            check=lambda c: (
                None
                if (c.api().get("exc") in ("RunInterrupted", None) and c.api().get("runs_done", 0) < 3)
                or c.rc in (143, -15)
                else ("wrong", f"SIGTERM in a loop: {c.api()}")
            ),
            during=after(9.0, signal_main(signal.SIGTERM)),
        ),
        Scenario(
            "api_handler_restored",
            "api",
            "api",
            api(
                "def mine(*a): pass\nsignal.signal(signal.SIGINT, mine)\nstreambench.run(CFG)\n"
                "report(exc=None, restored=signal.getsignal(signal.SIGINT) is mine)"
            ),
            ok=(0,),
            check=lambda c: (
                None
                if c.api().get("restored")
                else ("wrong", "run() did not restore the caller's SIGINT handler")
            ),
        ),
        Scenario(
            "api_run_in_thread",
            "api",
            "api",
            api(
                "box = []\n"
                "t = threading.Thread(target=lambda: box.append(attempt(lambda: streambench.run(CFG))))\n"
                "t.start(); t.join()"
            ),
            ok=(0,),
            check=returned,
            note="run() called from a worker thread",
        ),
        Scenario(
            "api_run_twice_same_id",
            "api",
            "api",
            api(
                'attempt(lambda: streambench.run(dict(CFG, run_id="same")))\n'
                'attempt(lambda: streambench.run(dict(CFG, run_id="same")))'
            ),
            ok=(0,),
            check=_second_refused,
        ),
        Scenario(
            "api_keyboard_in_predict_in_process_loop",
            "api",
            "api",
            api(
                "for _ in range(2):\n"
                '    out = attempt(lambda: streambench.run(dict(CFG, adapter="faulty", isolate=False, '
                'adapter_options={"fault": "keyboard", "stream_index": 1, "at_frame": 5})))\n'
            ),
            ok=(0,),
            check=_api_interrupted,
        ),
    ]
    return out


RECORDED = (
    "len(out.result.failures) + sum(not c.passed for c in out.result.session_audit.checks)"
    " if out.result.session_audit is not None else len(out.result.failures)"
)
"""The failures a run recorded: its streams' and its session audit's (a sealed worker counts the audit's
copies of a stream as streams too, so a fault planted by stream index may fall on one of them)."""


def _api_interrupted(ctx: Ctx) -> tuple[str, str] | None:
    """In process, a model's ``KeyboardInterrupt`` cannot be told from Ctrl-C: it reaches the caller as
    ``KeyboardInterrupt`` (docs/adapters.md, docs/python.md)."""
    got = ctx.api()
    if got.get("exc") != "KeyboardInterrupt":
        return "wrong", f"in process, a model's KeyboardInterrupt: {got or ctx.out.strip()[-200:]}"
    return None


def _api_recorded(ctx: Ctx) -> tuple[str, str] | None:
    got = ctx.api()
    if not got:
        return "wrong", f"exit {ctx.rc}, nothing reported (the script ended): {ctx.out.strip()[-200:]}"
    if got.get("exc") is not None:
        return "wrong", f"{got['exc']} escaped run(): {str(got.get('msg'))[:160]}"
    if got.get("value") is None and not got.get("failures") and "failures" in got:
        return "wrong", "the adapter's failure was not recorded"
    return None


def _second_refused(ctx: Ctx) -> tuple[str, str] | None:
    lines = [json.loads(x[9:]) for x in ctx.stdout.splitlines() if x.startswith("CAMPAIGN ")]
    if len(lines) != 2 or lines[0].get("exc") is not None:
        return "wrong", f"{lines}"
    if lines[1].get("exc") is None or "ValueError" not in lines[1].get("mro", []):
        return "wrong", f"a second run of one run id: {lines[1]}"
    return None


def scenarios() -> list[Scenario]:
    return api_scenarios()
