"""Golden recordings of every ``streambench`` CLI job, and a diff of two recordings, latencies aside.

Made for the restructuring of ``harness/`` into sub-packages: record the old tree, record the new tree,
diff; the command line and every figure that does not measure time must be unchanged.

Usage::

    python tests/golden/run_diff.py record SRC_TREE OUT_DIR   # runs the CLI of SRC_TREE, writes OUT_DIR
    python tests/golden/run_diff.py diff OUT_A OUT_B          # exit 0: equal apart from ignored fields

Run it with the project's virtual environment (``. .venv/bin/activate``): the CLI's dependencies (torch,
numpy, typer, ...) come from there, the streambench code from SRC_TREE.

``record``
    Runs 70 CLI jobs (:func:`plan_jobs`: ``run`` of every protocol -- online twice with other seeds,
    per-class thresholds, ``--isolate``, a planted adapter failure, robustness, causality with the
    reference and with a cheating adapter, detection, stability (two variants), hysteresis with
    examples/hysteresis/b_length.toml --; ``runs``, ``show`` of every run, ``compare`` (JSON, Markdown,
    table, a ``--fail-on`` gate), ``report`` of one run and of two, ``reindex``, ``sweep`` of
    examples/sweep.toml with ``--dry-run`` before and after and ``--report``, every ``score``
    subcommand, ``schema``, ``adapters``, ``env``, ``selftest`` and the ``--help`` of every command)
    with small, fixed seeds, sizes and run ids and ``--no-progress``, and keeps every file they write
    plus ``jobs.json`` (each job's argv, exit code, stdout and stderr). 2.5-3 minutes on 2 cores (timed
    runs one at a time; read-only and untimed jobs two at a time). Layout of OUT_DIR (must not exist,
    or be empty)::

        results/        the run store (--output-dir / --results-dir of every run and query)
        sweep_store/    the sweep's run store (its sweep file's output_dir points here)
        inputs/         files the jobs read: the sweep file, protocol configs, score files
        outputs/        files written with -o (the two-run report)
        cwd/            the jobs' working directory; anything a job leaves there is compared too
        provenance/     per job: every harness/protocols/adapters module loaded and its file
        jobs.json       per job: name, argv, exit code, stdout, stderr, seconds
        meta.json       SRC_TREE, OUT_DIR, python, date, how long recording took (not compared)

    How the CLI is started. Each job is ``[sys.executable, -I, -S, -B, -X, utf8, -c, PRELUDE, *args]``
    with cwd = OUT_DIR/cwd. The virtual environment holds an *editable* install of /work/main
    (``__editable___streambench_*_finder.py``, installed by a ``.pth`` file in site-packages). That
    finder sits on ``sys.meta_path`` *after* the normal path finder, so with SRC_TREE first on
    ``sys.path`` every module that exists in SRC_TREE does come from SRC_TREE (checked: the plain
    ``sys.path.insert(0, SRC)`` recipe loads /tmp/before's modules), but a module *missing* from
    SRC_TREE would silently be imported from /work/main instead of failing -- exactly the bug a
    restructuring can introduce -- and multiprocessing "spawn" children (``--isolate``, the sweep)
    would install the finder again. So the jobs run with ``-S`` (no ``site``: no ``.pth`` file runs, the
    editable finder is never installed, in spawned children either, since they inherit the interpreter
    flags and ``sys.path``), ``-I`` (no PYTHON* variables, no cwd or user site on the path), ``-B``
    (no ``__pycache__`` written into SRC_TREE) and ``-X utf8``; the PRELUDE puts SRC_TREE first on
    ``sys.path`` and the venv's site-packages (this interpreter's purelib/platlib) after the standard
    library, then calls ``streambench.harness.cli.main()`` with ``sys.argv[0] = "streambench"``. An ``atexit``
    hook writes every loaded ``harness``/``protocols``/``adapters`` module and its file to
    ``provenance/<job>.json``; ``record`` prints ``streambench.harness.__file__`` once and fails if any module
    came from outside SRC_TREE. The environment is fixed too: COLUMNS=400 (rich wraps no output line, only
    a table's title and caption to the table's width), TZ=UTC, NO_COLOR=1.

``diff``
    Compares the two recordings and lists every difference as ``file  path  A  B``; exit 1 if any.
    Absolute paths are normalised first (each recording's OUT_DIR -> ``<OUT>``, SRC_TREE -> ``<SRC>``),
    and a traceback string is reduced to its last line (the exception; file names and line numbers of
    the frames move when code moves). Compared:

    - every ``*.json`` file (result.json, robustness/causality/detection/stability/hysteresis.json,
      sweep.json, ...) structurally, every ``*.jsonl`` file line by line as JSON (a ``*_npz_b64`` field,
      the per-stream recording inside events.jsonl, is decoded and compared as arrays);
    - ``*.npz`` files array by array, exactly (scores, refers_to, labels, emitted_at, frame_times_ns,
      features, weights, meta, stage names), except the timing arrays (:data:`TIMING_ARRAYS`);
    - text files (scores.txt, the inputs, ...) exactly;
    - HTML reports (report.html, the two-run report, the sweep reports): the inline SVG plots are NOT
      compared -- their timing numbers cannot be told from the others reliably (axis ticks, bar
      heights and paths move with the measured latencies). Everything outside them is: section ids,
      headings, prose and every table row, with the timing cells masked as in stdout (below);
    - per job: the exit code (but selftest's, a timing verdict), stdout and stderr. A stdout that is
      JSON (``--json`` jobs) is compared structurally with the same ignore rules; other output unit by
      unit -- each table row (rich or Markdown; box drawing and padding removed, since column widths
      follow the values) and each paragraph of prose (joined, since rich wraps a table's caption to
      the table's width) -- after masking the cells under timing columns or in timing rows
      (:data:`TIMING_COLUMNS`, :data:`TIMING_ROWS`, :data:`TIMING_CELLS`) and the timing numbers in
      prose (:data:`TEXT_MASKS`, replaced by ``#``);
    - the presence of every file; ``index.sqlite`` (its content is what ``runs --json`` prints) and
      binary plots are compared by presence only.

    Ignored (:data:`IGNORE_RULES` by key path, :data:`TIMING_FIGURES`, :data:`DROP_LIST_ITEMS`, and the
    text masks above) -- each is a measurement of time, memory or energy, or depends on the clock, the
    machine's load, a temporary directory or the source tree's provenance, and nothing else; ``diff``
    prints how many values each rule skipped:

    - wall-clock stamps: ``created_at``, ``collected_at``, ``started_at``, ``finished_at``,
      ``indexed_at``, ``timestamp`` keys; ``UTC`` dates in the ``runs`` table;
    - latency: ``speed.latency`` mean/std/p50/p95/p99/max/min/fps (not ``n``), ``speed.rtf``,
      ``speed.processing_s`` (not ``speed.duration_s``, the streams' length), the replayed-pacing
      figures (deadline misses, drops, waits, response and staleness times), the per-stage breakdown
      (``ms_per_frame``, ``share``), ``device``; ``headline.mean_latency_ms`` / ``headline.rtf``
      estimate/low/high and ``headline.latency_spread``, the latency-spread warning; detection's
      ``latency`` block; ``selftest``'s measurements and verdicts (all of them timing); the latency
      figures (mean, p50, p95, p99, fps, rtf, energy, speed-ups) in ``show``/``runs``/``compare``
      figure lists and in headline strings, and their Mann-Whitney p-values and regression verdicts;
      the ``caching`` check's measured ratio (not its verdict);
    - memory and energy measured: RSS and CUDA bytes, energy, power, their durations and samples;
    - environment items that change run to run or tree to tree: ``collected_at``, ``harness_git`` /
      ``adapter_git`` (commit and dirty flag of SRC_TREE), the sweep's per-attempt worker (host:pid)
      and wall times, the name of a sweep worker's temporary run directory.

    Never ignored: F1/accuracy curves (algorithmic and compute-aware clocks), segment F1, EER, AUC,
    FAR/FRR, Jaccard, lags and gaps, check verdicts and max differences (but caching's speed ratio),
    scores, thresholds, configurations (``deltas_ms`` and every ``*_ms`` setting), seeds, data hashes,
    fingerprints, FLOPs, counts, statuses and exit codes. Two kept figures do depend on timing, but
    only under extreme load: the compute-aware F1 (``frame_replay`` curves; at Δt >= 50 ms it moves
    only if a predict() call of these sub-millisecond adapters takes > 50 ms) and the caching check's
    verdict (fails below a 0.5x speed ratio); if either ever differs, re-record rather than widen the
    list. Floats are compared exactly (``--float-tol`` relaxes that).
"""

from __future__ import annotations

import argparse
import base64
import difflib
import fnmatch
import html.parser
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# --------------------------------------------------------------------------------------------------
# record
# --------------------------------------------------------------------------------------------------

PACKAGES = ("streambench",)

PRELUDE = """\
import atexit, json, sys
SRC = {src!r}
sys.path.insert(0, SRC)
sys.path.extend(p for p in {site!r} if p not in sys.path)
def _golden_provenance():
    mods = {{n: getattr(m, "__file__", None) for n, m in list(sys.modules.items())
             if n.split(".")[0] in {packages!r}}}
    with open({prov!r}, "w", encoding="utf-8") as fh:
        json.dump(mods, fh, indent=1, sort_keys=True)
atexit.register(_golden_provenance)
from streambench.harness.cli import main
sys.argv[0] = "streambench"
main()
"""

# the --help of every command (the command line must stay identical)
HELP_COMMANDS: tuple[tuple[str, ...], ...] = (
    (),
    ("run",),
    ("adapters",),
    ("sweep",),
    ("report",),
    ("runs",),
    ("show",),
    ("reindex",),
    ("compare",),
    ("selftest",),
    ("env",),
    ("schema",),
    ("score",),
    ("score", "online"),
    ("score", "detection"),
    ("score", "calibration"),
    ("score", "ranking"),
)

ONLINE = ("--streams", "6", "--duration", "6", "--seed", "3")
SMALL = ("--streams", "4", "--duration", "6", "--seed", "3")

# (run id, extra arguments of `streambench run`); each also gets --no-progress, --run-id, --output-dir
RUNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("online-a", ONLINE),
    ("online-b", ("--streams", "6", "--duration", "6", "--seed", "4")),
    ("online-perclass", ("--streams", "10", "--duration", "6", "--seed", "5", "--decision", "per_class")),
    ("online-isolate", (*SMALL, "--isolate")),
    (
        "online-faulty",
        (
            *SMALL,
            "--adapter",
            "faulty",
            "--option",
            "fault=raise",
            "--option",
            "stream_index=2",
            "--option",
            "at_frame=10",
        ),
    ),
    ("robustness", (*SMALL, "--protocol", "robustness")),
    ("causality", (*SMALL, "--protocol", "causality")),
    ("causality-peeking", (*SMALL, "--protocol", "causality", "--adapter", "offender-peeking")),
    ("detection", ("--streams", "6", "--seed", "3", "--protocol", "detection")),
    ("stability", (*ONLINE, "--protocol", "stability", "--adapter", "topk-encoder")),
    (
        "stability-window",
        (*ONLINE, "--protocol", "stability", "--adapter", "topk-encoder", "--option", "variant=window"),
    ),
    ("hysteresis", ("--protocol", "hysteresis", "--protocol-config", "{inputs}/b_length.toml")),
)


@dataclass
class Job:
    """One CLI invocation: ``args`` after ``streambench``; ``{out}``, ``{results}``... are filled in."""

    name: str
    args: tuple[str, ...]
    json_stdout: bool = False
    timing_only: bool = False  # its exit code and verdicts measure time (selftest)


def plan_jobs() -> list[tuple[bool, list[Job]]]:
    """The jobs in phases, phase after phase: (parallel, jobs). The jobs of a parallel phase run two at
    a time (they read, or are not timed); every timed run, the sweep and selftest run alone."""
    pure: list[Job] = [Job("help" + "".join(f"-{c}" for c in cmd), (*cmd, "--help")) for cmd in HELP_COMMANDS]
    pure += [
        Job("adapters", ("adapters",)),
        Job("schema", ("schema",), json_stdout=True),
        Job("env-json", ("env", "--json"), json_stdout=True),
        Job(
            "score-calibration-json",
            ("score", "calibration", "{inputs}/calibration.txt", "--json"),
            json_stdout=True,
        ),
        Job("score-calibration", ("score", "calibration", "{inputs}/calibration.txt", "--bins", "5")),
        Job(
            "score-ranking-json",
            ("score", "ranking", "--run", "{inputs}/run.trec", "--qrels", "{inputs}/qrels.trec", "--json"),
            json_stdout=True,
        ),
        Job(
            "score-ranking",
            (
                "score",
                "ranking",
                "--run",
                "{inputs}/run.trec",
                "--qrels",
                "{inputs}/qrels.trec",
                "--k",
                "1,3",
                "--gain",
                "exponential",
            ),
        ),
    ]
    runs = [
        Job(f"run-{rid}", ("run", *extra, "--no-progress", "--run-id", rid, "--output-dir", "{results}"))
        for rid, extra in RUNS
    ]
    rd = ("--results-dir", "{results}")
    listing = [
        Job("runs-json", ("runs", *rd, "--json"), json_stdout=True),
        Job("runs", ("runs", *rd)),
    ]
    queries = [Job(f"show-{rid}-json", ("show", rid, *rd, "--json"), json_stdout=True) for rid, _ in RUNS]
    queries += [
        Job("show-online-a", ("show", "online-a", *rd)),
        Job("show-online-a-markdown", ("show", "online-a", *rd, "--markdown")),
        Job("show-by-dir", ("show", "{results}/robustness", "--json"), json_stdout=True),
        Job("compare-json", ("compare", "online-a", "online-b", *rd, "--json"), json_stdout=True),
        Job("compare-markdown", ("compare", "online-a", "online-b", *rd, "--markdown")),
        Job("compare", ("compare", "online-a", "online-b", *rd)),
        Job("compare-fail-on", ("compare", "online-a", "online-b", *rd, "--fail-on", "f1@0ms:-0.001")),
        Job("report-online-a", ("report", "online-a", *rd)),
        Job("report-two", ("report", "online-a", "online-b", *rd, "-o", "{outputs}/compare.html")),
        Job("score-online", ("score", "online", "{results}/online-a")),
        Job(
            "score-detection-json",
            ("score", "detection", "{results}/detection/scores.txt", "--json"),
            json_stdout=True,
        ),
        Job(
            "score-detection", ("score", "detection", "{results}/detection/scores.txt", "--threshold", "0.5")
        ),
    ]
    reindex = [
        Job("reindex", ("reindex", *rd)),
        Job("runs-json-after-reindex", ("runs", *rd, "--json"), json_stdout=True),
    ]
    sweep = ("sweep", "{inputs}/sweep.toml", "--no-progress")
    sweeps = [
        Job("sweep-dry-run", (*sweep, "--dry-run")),
        Job("sweep", sweep),
        Job("sweep-dry-run-after", (*sweep, "--dry-run")),
        Job("sweep-again-report", (*sweep, "--report")),
        Job("sweep-runs-json", ("runs", "--results-dir", "{sweep_store}", "--json"), json_stdout=True),
    ]
    timing = [Job("selftest-json", ("selftest", "--json"), json_stdout=True, timing_only=True)]
    return [
        (True, pure),
        (False, runs),
        (False, listing),
        (True, queries),
        (False, reindex),
        (False, sweeps),
        (False, timing),
    ]


def write_inputs(src: Path, out: Path) -> None:
    """The files the jobs read, all derived from SRC_TREE's examples or fixed seeds."""
    inputs = out / "inputs"
    inputs.mkdir(parents=True)
    sweep_text = (src / "examples" / "sweep.toml").read_text(encoding="utf-8")
    sweep_text, n = re.subn(
        r'^output_dir\s*=\s*"[^"]*"', f'output_dir = "{out / "sweep_store"}"', sweep_text, flags=re.M
    )
    if n != 1:
        raise SystemExit(f"{src}/examples/sweep.toml: expected one output_dir line, found {n}")
    (inputs / "sweep.toml").write_text(sweep_text, encoding="utf-8")
    shutil.copyfile(src / "examples" / "hysteresis" / "b_length.toml", inputs / "b_length.toml")
    rng = np.random.default_rng(7)
    conf = rng.uniform(0.0, 1.0, 200)
    correct = rng.uniform(0.0, 1.0, 200) < conf
    (inputs / "calibration.txt").write_text(
        "".join(f"{c:.4f} {int(k)}\n" for c, k in zip(conf, correct, strict=True)), encoding="utf-8"
    )
    run_lines, qrel_lines = [], []
    for q in range(1, 6):
        docs = rng.permutation(12)[:10]
        for rank, d in enumerate(docs, start=1):
            run_lines.append(f"q{q} Q0 d{d} {rank} {10.0 - rank / 2:.2f} golden\n")
        for d in rng.permutation(12)[:3]:
            qrel_lines.append(f"q{q} 0 d{d} {int(rng.integers(1, 3))}\n")
    (inputs / "run.trec").write_text("".join(run_lines), encoding="utf-8")
    (inputs / "qrels.trec").write_text("".join(qrel_lines), encoding="utf-8")


def site_dirs() -> list[str]:
    """This interpreter's site-packages (the venv's), added by hand since the jobs run with -S."""
    paths = [sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    return list(dict.fromkeys(p for p in paths if p))


def job_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update({"COLUMNS": "400", "LINES": "60", "TZ": "UTC", "NO_COLOR": "1", "TERM": "dumb"})
    env.pop("FORCE_COLOR", None)
    return env


def run_job(job: Job, src: Path, out: Path, places: dict[str, str]) -> dict[str, Any]:
    args = [a.format(**places) for a in job.args]
    prov = out / "provenance" / f"{job.name}.json"
    code = PRELUDE.format(src=str(src), site=site_dirs(), packages=PACKAGES, prov=str(prov))
    argv = [sys.executable, "-I", "-S", "-B", "-X", "utf8", "-c", code, *args]
    started = time.perf_counter()
    done = subprocess.run(
        argv,
        cwd=out / "cwd",
        env=job_env(),
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=600,
        check=False,
    )
    seconds = time.perf_counter() - started
    return {
        "name": job.name,
        "argv": ["streambench", *args],
        "json_stdout": job.json_stdout,
        "timing_only": job.timing_only,
        "exit_code": done.returncode,
        "stdout": done.stdout,
        "stderr": done.stderr,
        "seconds": round(seconds, 3),
    }


def check_provenance(src: Path, out: Path, records: Sequence[dict[str, Any]]) -> list[str]:
    """Every loaded harness/protocols/adapters module must come from SRC_TREE."""
    problems: list[str] = []
    shown = False
    for rec in records:
        prov = out / "provenance" / f"{rec['name']}.json"
        if not prov.is_file():
            problems.append(f"{rec['name']}: no provenance written (did the interpreter start?)")
            continue
        modules: dict[str, str | None] = json.loads(prov.read_text(encoding="utf-8"))
        if not shown and "streambench.harness" in modules:
            print(f"streambench.harness.__file__ = {modules['streambench.harness']}")
            shown = True
        for name, file in modules.items():
            if file is None:  # a namespace package would have no file: the layout must not rely on one
                problems.append(f"{rec['name']}: module {name} has no __file__ (namespace package?)")
            elif not Path(file).resolve().is_relative_to(src):
                problems.append(f"{rec['name']}: module {name} imported from {file}, outside {src}")
    return problems


def record(src_arg: str, out_arg: str) -> int:
    src = Path(src_arg).resolve()
    out = Path(out_arg).resolve()
    if not any((src / "harness" / name).is_file() for name in ("cli.py", "cli/__init__.py")):
        print(f"error: {src} has no harness/cli.py or harness/cli/", file=sys.stderr)
        return 2
    if out.exists() and any(out.iterdir()):
        print(f"error: {out} exists and is not empty", file=sys.stderr)
        return 2
    for sub in ("results", "sweep_store", "outputs", "cwd", "provenance"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    write_inputs(src, out)
    places = {
        "out": str(out),
        "results": str(out / "results"),
        "sweep_store": str(out / "sweep_store"),
        "inputs": str(out / "inputs"),
        "outputs": str(out / "outputs"),
    }
    started = time.perf_counter()
    records: list[dict[str, Any]] = []
    for parallel, phase in plan_jobs():
        with ThreadPoolExecutor(max_workers=2 if parallel else 1) as pool:
            done = list(pool.map(lambda j: run_job(j, src, out, places), phase))
        for rec in done:
            print(f"{rec['seconds']:7.1f} s  exit {rec['exit_code']}  {rec['name']}", flush=True)
        records.extend(done)
    total = time.perf_counter() - started
    (out / "jobs.json").write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    meta = {
        "src_tree": str(src),
        "out_dir": str(out),
        "python": sys.version,
        "executable": sys.executable,
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": round(total, 1),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    problems = check_provenance(src, out, records)
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    print(f"recorded {len(records)} jobs from {src} into {out} in {total:.0f} s")
    return 1 if problems else 0


# --------------------------------------------------------------------------------------------------
# diff: normalisation and ignore rules
# --------------------------------------------------------------------------------------------------

# (file glob, key path pattern, why). File globs match the file's path relative to the recording
# ("results/online-a/result.json"), "<file>:<line>" for a .jsonl line, or "jobs/<job>/stdout" for a
# job's JSON stdout. Key path patterns are "/"-separated: "**" any number of keys, "[]" any list element,
# "[x]" the element whose "name" or "key" is x, "a|b" either key, shell wildcards inside a key. Keep it
# short and exact: only measurements of time, memory or energy, clock stamps and provenance belong here.
IGNORE_RULES: tuple[tuple[str, str, str], ...] = (
    (
        "*",
        "**/created_at|collected_at|started_at|finished_at|ended_at|indexed_at|timestamp",
        "wall-clock stamp",
    ),
    ("*", "**/speed/latency/mean_ms|std_ms|p50_ms|p95_ms|p99_ms|max_ms|min_ms|fps", "latency"),
    ("*", "**/speed/rtf|processing_s", "real-time factor, processing time"),
    (
        "*",
        "**/speed/replay/deadline_miss_rate|drop_rate|mean_wait_ms|*_response_ms|*_staleness_ms",
        "pacing replayed from the measured latencies",
    ),
    ("*", "**/speed/breakdown/[]/ms_per_frame|share", "per-stage host time"),
    ("*", "**/speed/device", "CUDA device time"),
    ("*", "**/headline/mean_latency_ms|rtf/estimate|low|high", "latency interval"),
    ("*", "**/headline/latency_spread", "latency IQR/median"),
    (
        "*",
        "**/resources/memory/peak_rss_bytes|rss_start_bytes|rss_end_bytes|peak_cuda_bytes"
        "|peak_cuda_reserved_bytes",
        "memory measured",
    ),
    (
        "*",
        "**/resources/gpu_energy|cpu_energy/energy_j|net_energy_j|idle_power_w|mean_power_w|duration_s"
        "|samples|throttled|edge_start|edge_end|zones_j|wraps",
        "energy measured",
    ),
    ("*", "**/resources/energy_per_frame_j|power_at_rtf1_w", "energy measured"),
    ("*", "**/harness_git|adapter_git", "source-tree provenance (commit, dirty)"),
    ("*detection.json", "latency/mean_ms|p50_ms|p95_ms|p99_ms|max_ms", "detection run's latency"),
    ("*causality.json", "**/checks/[caching]/max_difference", "caching check's measured speed ratio"),
    ("*sweep.json", "attempts/[]/worker|wall_s", "sweep worker (host:pid) and wall time"),
    ("*sweep.json", "measured_wall_s", "sweep run's wall time"),
    ("jobs/selftest*", "resolution|overhead|busy_wait|passed", "selftest measures time only"),
)

# keys of figure entries (`show`/`runs`/`compare` JSON: lists "figures" and "changes") that are timing
# figures: everything in such an entry but its identity (key, label, unit, ...) is ignored
TIMING_FIGURES = re.compile(r"^(mean|p50|p95|p99|fps|rtf|energy|speedup.*|.*latency.*)$")
FIGURE_LISTS = frozenset({"figures", "changes"})
FIGURE_IDENTITY = frozenset(
    {"key", "label", "unit", "better", "confidence", "n_streams", "n_frames", "reason"}
)

# strings dropped from any list, and output lines dropped, before comparing: the latency-spread warning
# appears only when the machine was busy
DROP_LIST_ITEMS = (re.compile(r"^latency spread IQR/median = "),)
DROP_LINES = (re.compile(r"latency spread IQR/median = "),)

# regexes whose groups are masked in every string, output line and report text: timing numbers in prose
_NUM = r"(-?\d[\d.,]*(?:e[-+]?\d+)?)"
TEXT_MASKS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        rf"median latency {_NUM} \S+ first run, {_NUM} \S+ repeat \(speed-up {_NUM}x",  # caching check
        rf"\bp(?:50|95|99) {_NUM} ms",
        rf"\bp50/p95 {_NUM}/{_NUM} ms",
        rf"\b(?:max|mean|avg) {_NUM} ms",
        rf"\bmean latency {_NUM} \[{_NUM}, {_NUM}\]",
        rf"\bFPS {_NUM}",
        rf"\bRTF {_NUM}",
        rf"\bdeadline misses {_NUM} %",
        rf"\bdropped {_NUM} %",
        rf"\bmean wait {_NUM} ms",
        rf"\bstaleness {_NUM} ms",
        rf"\blatency IQR/median {_NUM} %",
        rf"\bpeak RSS {_NUM} \S+",
        rf"; {_NUM} s \((?:local|ray)\)",  # sweep wall time
        r"/streambench-sweep-(\w{8})\b",  # a sweep worker's temporary run directory (tempfile)
        r"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?)",  # ISO and report dates
        r"│ (\d\d-\d\d \d\d:\d\d) │",  # the `runs` table's UTC column
    )
)

# table columns (rich, Markdown, HTML) whose cells are timings
TIMING_COLUMNS = frozenset(
    {
        "avg",
        "p50",
        "p95",
        "p99",
        "max",
        "FPS",
        "RTF",
        "ms",
        "share %",
        "UTC",  # run, runs
        "latency mean",
        "speed-up",  # sweep report
        "ms per frame",
        "share (%)",
        "mean latency (ms)",
        "p95 (ms)",
        "on the latency front",  # HTML report
    }
)
# table rows (by their first cell) whose cells are timings, memory or energy, or provenance
TIMING_ROWS = re.compile(
    r"^(latency\b|mean latency|FPS$|RTF$|deadline-miss|W at RTF|GPU energy|CPU energy|energy per frame"
    r"|peak RSS|peak CUDA|collected_at$|harness_git$|adapter_git$)"
)
# single cells: (row label, column)
TIMING_CELLS = frozenset({("caching", "max difference"), ("caching", "max |Δscore|")})

TIMING_ARRAYS = frozenset({"latency_ns", "stage_ns", "device_ns", "paced_start_ns"})

MASK = "#"
TRACEBACK = re.compile(r"^Traceback \(most recent call last\):\n", re.M)


@dataclass(frozen=True)
class Rule:
    file_glob: str
    pattern: tuple[str, ...]
    reason: str


RULES = tuple(Rule(f, tuple(p.split("/")), r) for f, p, r in IGNORE_RULES)


@dataclass(frozen=True)
class Seg:
    """One step of a key path: a dict key, or a list index with the element's name/key if it has one."""

    key: str | None = None
    index: int | None = None
    label: str | None = None

    def __str__(self) -> str:
        if self.key is not None:
            return f".{self.key}" if re.fullmatch(r"[\w@%-]+", self.key) else f"[{self.key!r}]"
        return f"[{self.index}{'=' + self.label if self.label else ''}]"


def _seg_matches(pat: str, seg: Seg) -> bool:
    if pat.startswith("[") and pat.endswith("]"):
        if seg.index is None:
            return False
        inner = pat[1:-1]
        return inner in ("", "*") or (seg.label is not None and seg.label in inner.split("|"))
    if seg.key is None:
        return False
    return any(fnmatch.fnmatchcase(seg.key, alt) for alt in pat.split("|"))


def _path_matches(pattern: Sequence[str], path: Sequence[Seg]) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_path_matches(rest, path[i:]) for i in range(len(path) + 1))
    return bool(path) and _seg_matches(head, path[0]) and _path_matches(rest, path[1:])


def ignored(file: str, path: Sequence[Seg]) -> str | None:
    """The reason the value at ``path`` of ``file`` is ignored, or None."""
    for rule in RULES:
        if fnmatch.fnmatchcase(file, rule.file_glob) and _path_matches(rule.pattern, path):
            return rule.reason
    # a timing figure in a figure list (show / runs / compare): its values, intervals and verdicts
    for i, seg in enumerate(path[1:], start=1):
        parent = path[i - 1].key
        if seg.label is not None and parent in FIGURE_LISTS and TIMING_FIGURES.match(seg.label):
            rest = path[i + 1 :]
            if rest and rest[0].key not in FIGURE_IDENTITY:
                return "timing figure"
    return None


@dataclass
class Recording:
    root: Path
    src: str
    out: str

    @classmethod
    def load(cls, root: Path) -> Recording:
        meta = json.loads((root / "meta.json").read_text(encoding="utf-8"))
        return cls(root=root.resolve(), src=meta["src_tree"], out=meta["out_dir"])

    def normalise(self, text: str) -> str:
        """Absolute paths of this recording replaced; a traceback reduced to its exception line."""
        for old, new in sorted(((self.out, "<OUT>"), (self.src, "<SRC>")), key=lambda p: -len(p[0])):
            text = text.replace(old, new)
        if TRACEBACK.search(text):
            text = TRACEBACK.sub("Traceback (frames not compared):\n", text)
            text = re.sub(r"^  .*\n", "", text, flags=re.M)
        return text


def mask_text(text: str) -> str:
    for rx in TEXT_MASKS:
        text = rx.sub(_mask_groups, text)
    return text


def _mask_groups(m: re.Match[str]) -> str:
    s, start = m.group(0), m.start(0)
    pieces, pos = [], 0
    for g in range(1, (m.re.groups or 0) + 1):
        a, b = m.span(g)
        if a < 0:
            continue
        pieces += [s[pos : a - start], MASK]
        pos = b - start
    pieces.append(s[pos:])
    return "".join(pieces)


@dataclass
class Diff:
    file: str
    path: str
    a: str
    b: str


@dataclass
class Differ:
    rec_a: Recording
    rec_b: Recording
    diffs: list[Diff] = field(default_factory=list)
    float_tol: float = 0.0
    ignored_hits: dict[str, int] = field(default_factory=dict)

    def skip(self, file: str, path: Sequence[Seg]) -> bool:
        """True (and counted) when the value at ``path`` is ignored."""
        reason = ignored(file, path)
        if reason is not None:
            self.ignored_hits[reason] = self.ignored_hits.get(reason, 0) + 1
        return reason is not None

    def add(self, file: str, path: str, a: object, b: object) -> None:
        self.diffs.append(Diff(file, path, _short(a), _short(b)))

    # -- JSON ---------------------------------------------------------------------------------
    def prep(self, rec: Recording, value: Any) -> Any:
        """Normalised copy: paths, tracebacks, masks in strings; busy-machine warnings dropped."""
        if isinstance(value, str):
            return mask_text(rec.normalise(value))
        if isinstance(value, list):
            return [
                self.prep(rec, v)
                for v in value
                if not (isinstance(v, str) and any(rx.search(v) for rx in DROP_LIST_ITEMS))
            ]
        if isinstance(value, dict):
            return {rec.normalise(str(k)): self.prep(rec, v) for k, v in value.items()}
        return value

    def json_values(self, file: str, a: Any, b: Any, path: list[Seg] | None = None) -> None:
        path = path or []
        if self.skip(file, path):
            return
        where = "".join(map(str, path)) or "$"
        if isinstance(a, dict) and isinstance(b, dict):
            for k in list(a) + [k for k in b if k not in a]:
                sub = [*path, Seg(key=k)]
                if k not in b or k not in a:
                    if not self.skip(file, sub):
                        self.add(file, where + str(Seg(key=k)), a.get(k, "<missing>"), b.get(k, "<missing>"))
                    continue
                if k.endswith("_npz_b64") and isinstance(a[k], str) and isinstance(b[k], str):
                    self.npz_bytes(f"{file}:{where}{Seg(key=k)}", a[k], b[k], b64=True)
                    continue
                self.json_values(file, a[k], b[k], sub)
            return
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                self.add(file, where + ".length", len(a), len(b))
            for i, (x, y) in enumerate(zip(a, b, strict=False)):
                self.json_values(file, x, y, [*path, Seg(index=i, label=_label(x))])
            return
        if not _equal(a, b, self.float_tol):
            self.add(file, where, a, b)

    def json_file(self, rel: str, a_text: str, b_text: str) -> None:
        try:
            a, b = json.loads(a_text), json.loads(b_text)
        except json.JSONDecodeError as exc:
            self.add(rel, "$", f"not JSON: {exc}", "")
            return
        self.json_values(rel, self.prep(self.rec_a, a), self.prep(self.rec_b, b))

    def jsonl_file(self, rel: str, a_text: str, b_text: str) -> None:
        la, lb = a_text.splitlines(), b_text.splitlines()
        if len(la) != len(lb):
            self.add(rel, "lines", len(la), len(lb))
        for i, (x, y) in enumerate(zip(la, lb, strict=False)):
            self.json_file(f"{rel}:{i + 1}", x, y)

    # -- arrays -------------------------------------------------------------------------------
    def npz_bytes(self, where: str, a: str | bytes, b: str | bytes, b64: bool = False) -> None:
        raw_a = base64.b64decode(a) if b64 else a
        raw_b = base64.b64decode(b) if b64 else b
        assert isinstance(raw_a, bytes) and isinstance(raw_b, bytes)
        with (
            np.load(io.BytesIO(raw_a), allow_pickle=False) as za,
            np.load(io.BytesIO(raw_b), allow_pickle=False) as zb,
        ):
            names_a, names_b = list(za.files), list(zb.files)
            for key in names_a + [k for k in names_b if k not in names_a]:
                if key.rsplit("/", 1)[-1] in TIMING_ARRAYS:
                    continue
                if key not in names_a or key not in names_b:
                    self.add(where, key, _presence(key in names_a), _presence(key in names_b))
                    continue
                x, y = za[key], zb[key]
                if x.shape != y.shape or x.dtype != y.dtype:
                    self.add(where, key, f"{x.dtype}{list(x.shape)}", f"{y.dtype}{list(y.shape)}")
                elif not np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"):
                    bad = np.argwhere(x != y)
                    first = tuple(int(v) for v in bad[0]) if bad.size else ()
                    self.add(
                        where,
                        f"{key}{list(first)} ({len(bad)} elements differ)",
                        x[first] if first else x,
                        y[first] if first else y,
                    )

    # -- text ---------------------------------------------------------------------------------
    def text_lines(self, rel: str, a_text: str, b_text: str, mask: bool = True) -> None:
        la = _output_lines(mask_text_lines(self.rec_a.normalise(a_text)) if mask else a_text.splitlines())
        lb = _output_lines(mask_text_lines(self.rec_b.normalise(b_text)) if mask else b_text.splitlines())
        self.line_diffs(rel, "line", la, lb)

    def line_diffs(self, rel: str, what: str, la: list[str], lb: list[str]) -> None:
        matcher = difflib.SequenceMatcher(a=la, b=lb, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            where = f"{what} {i1 + 1}-{i2} / {j1 + 1}-{j2}"
            if tag == "replace" and i2 - i1 == j2 - j1:
                for k in range(i2 - i1):
                    self.add(rel, f"{what} {i1 + k + 1} / {j1 + k + 1}", *_word_diff(la[i1 + k], lb[j1 + k]))
            else:
                self.add(rel, where, "\n".join(la[i1:i2]) or "<none>", "\n".join(lb[j1:j2]) or "<none>")

    def html_file(self, rel: str, a_text: str, b_text: str) -> None:
        sa = html_lines(self.rec_a.normalise(a_text))
        sb = html_lines(self.rec_b.normalise(b_text))
        self.line_diffs(rel, "text line", sa, sb)

    # -- jobs ---------------------------------------------------------------------------------
    def jobs(self) -> None:
        ja = {j["name"]: j for j in json.loads((self.rec_a.root / "jobs.json").read_text(encoding="utf-8"))}
        jb = {j["name"]: j for j in json.loads((self.rec_b.root / "jobs.json").read_text(encoding="utf-8"))}
        for name in list(ja) + [n for n in jb if n not in ja]:
            if name not in ja or name not in jb:
                self.add("jobs.json", name, _presence(name in ja), _presence(name in jb))
                continue
            a, b = ja[name], jb[name]
            base = f"jobs/{name}"
            argv_a = [self.rec_a.normalise(x) for x in a["argv"]]
            argv_b = [self.rec_b.normalise(x) for x in b["argv"]]
            if argv_a != argv_b:
                self.add(base, "argv", " ".join(argv_a), " ".join(argv_b))
            if a["exit_code"] != b["exit_code"] and not a.get("timing_only"):
                self.add(base, "exit_code", a["exit_code"], b["exit_code"])
            if a.get("json_stdout") and _is_json(a["stdout"]) and _is_json(b["stdout"]):
                self.json_file(f"{base}/stdout", a["stdout"], b["stdout"])
            else:
                self.text_lines(f"{base}/stdout", a["stdout"], b["stdout"])
            self.text_lines(f"{base}/stderr", a["stderr"], b["stderr"])

    # -- files --------------------------------------------------------------------------------
    def files(self) -> None:
        fa, fb = _tree(self.rec_a.root), _tree(self.rec_b.root)
        for rel in sorted(set(fa) | set(fb)):
            if rel not in fa or rel not in fb:
                self.add(rel, "file", _presence(rel in fa), _presence(rel in fb))
                continue
            pa, pb = self.rec_a.root / rel, self.rec_b.root / rel
            name = pa.name
            if name.endswith(".json"):
                self.json_file(rel, _read(pa), _read(pb))
            elif name.endswith(".jsonl"):
                self.jsonl_file(rel, _read(pa), _read(pb))
            elif name.endswith(".npz"):
                self.npz_bytes(rel, pa.read_bytes(), pb.read_bytes())
            elif name.endswith(".html"):
                self.html_file(rel, _read(pa), _read(pb))
            elif name.endswith(PRESENCE_ONLY):
                continue
            elif name.endswith(TEXT_SUFFIXES):
                ta, tb = self.rec_a.normalise(_read(pa)), self.rec_b.normalise(_read(pb))
                if ta != tb:
                    self.text_lines(rel, ta, tb, mask=False)
            elif pa.read_bytes() != pb.read_bytes():
                self.add(rel, "bytes", f"{pa.stat().st_size} bytes", f"{pb.stat().st_size} bytes")


NOT_COMPARED = ("jobs.json", "meta.json")
NOT_COMPARED_DIRS = ("provenance/",)
PRESENCE_ONLY = (".sqlite", ".sqlite-wal", ".sqlite-shm", ".png", ".svg", ".pdf", ".lock")
TEXT_SUFFIXES = (".txt", ".md", ".toml", ".csv", ".trec", ".tsv", ".log")


def _tree(root: Path) -> list[str]:
    out = []
    for p in root.rglob("*"):
        if p.is_file():
            rel = p.relative_to(root).as_posix()
            if rel not in NOT_COMPARED and not rel.startswith(NOT_COMPARED_DIRS):
                out.append(rel)
    return out


def _presence(present: bool) -> str:
    return "present" if present else "<missing>"


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _read(p: Path) -> str:
    return p.read_text(encoding="utf-8", errors="replace")


def _label(x: Any) -> str | None:
    if isinstance(x, dict):
        for k in ("name", "key"):
            if isinstance(x.get(k), str):
                return str(x[k])
    return None


def _equal(a: Any, b: Any, tol: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b or (tol > 0 and math.isclose(a, b, rel_tol=tol, abs_tol=tol))
    return type(a) is type(b) and a == b


def _short(x: object, limit: int = 400) -> str:
    if isinstance(x, np.generic):
        x = x.item()
    s = x if isinstance(x, str) else repr(x) if isinstance(x, np.ndarray) else json.dumps(x, default=str)
    return s if len(s) <= limit else s[:limit] + f"... ({len(s)} chars)"


_BOX = re.compile(r"[\u2500-\u257f]+")


def mask_cells(header: Sequence[str] | None, cells: list[str]) -> list[str]:
    """A table row with the cells under a timing column, or in a timing row, replaced by MASK."""
    cells = [c.strip() for c in cells]
    first = next((i for i, c in enumerate(cells) if c), 0)
    label = cells[first] if cells else ""
    timing_row = bool(TIMING_ROWS.match(label))
    heads = [h.strip() for h in header] if header is not None and len(header) == len(cells) else None
    out = []
    for i, cell in enumerate(cells):
        head = heads[i] if heads else ""
        timing = head in TIMING_COLUMNS or (i != first and (timing_row or (label, head) in TIMING_CELLS))
        out.append(MASK if cell and timing else cell)
    return out


def mask_text_lines(text: str) -> list[str]:
    """Output lines with the cells of timing columns / rows of its tables (rich or Markdown) and the
    timing numbers of its text masked."""
    lines = text.splitlines()
    out: list[str] = []
    header: list[str] | None = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if "┃" in line:  # rich header row
            header = line.split("┃")
        elif "│" in line and header is not None:  # rich body row
            line = "│".join(mask_cells(header, line.split("│")))
        elif stripped.startswith("|") and stripped.endswith("|") and len(stripped) > 1:  # Markdown
            cells = stripped.split("|")
            if re.fullmatch(r"[|:\- ]+", stripped):
                pass
            elif re.fullmatch(r"[|:\- ]+", nxt or "x"):
                header = cells
            else:
                line = "|".join(mask_cells(header, cells))
        else:
            if stripped.startswith("└") or not stripped:
                header = None
        out.append(mask_text(line))
    return out


def _output_lines(lines: Iterable[str]) -> list[str]:
    """Comparable units of an output: each table row (box drawing and padding removed, so column widths,
    which follow the values, do not matter) and each paragraph of prose joined into one line (rich wraps
    a table's title and caption to the table's width, which timing cells change)."""
    out: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append(" ".join(para))
            para.clear()

    for raw in lines:
        if any(rx.search(raw) for rx in DROP_LINES):
            continue
        structural = bool(_BOX.search(raw)) or raw.lstrip().startswith(("|", "#", "- ", "> "))
        line = " ".join(_BOX.sub(" ", raw).split())
        if structural:
            flush()
            if line:
                out.append(line)
        elif line:
            para.append(line)
        else:
            flush()
    flush()
    return out


def _word_diff(a: str, b: str, context: int = 6) -> tuple[str, str]:
    """The differing words of two lines with a little context, for a readable report."""
    wa, wb = a.split(), b.split()
    parts_a, parts_b = [], []
    ops: list[tuple[int, int, int, int]]
    if len(wa) == len(wb):  # same shape (a table row, a sentence with other numbers): word by word
        ops = [(i, i + 1, i, i + 1) for i in range(len(wa)) if wa[i] != wb[i]]
    else:
        matcher = difflib.SequenceMatcher(a=wa, b=wb, autojunk=False)
        ops = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
    for i1, i2, j1, j2 in ops:
        lo_a, lo_b = max(0, i1 - context), max(0, j1 - context)
        parts_a.append(" ".join([*wa[lo_a:i1], "[[", *wa[i1:i2], "]]", *wa[i2 : i2 + context]]))
        parts_b.append(" ".join([*wb[lo_b:j1], "[[", *wb[j1:j2], "]]", *wb[j2 : j2 + context]]))
    return " … ".join(parts_a), " … ".join(parts_b)


class _HtmlText(html.parser.HTMLParser):
    """The visible text of a report outside its plots: one line per block, table rows as cells."""

    BLOCKS = frozenset(
        {
            "p",
            "li",
            "h1",
            "h2",
            "h3",
            "h4",
            "caption",
            "summary",
            "div",
            "section",
            "table",
            "dt",
            "dd",
            "pre",
            "blockquote",
            "figcaption",
        }
    )
    SKIP = frozenset({"svg", "style", "script"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self._skip = 0
        self._text: list[str] = []
        self._row: list[str] | None = None
        self._row_is_head = False
        self._header: list[str] | None = None

    def _flush(self) -> None:
        text = " ".join("".join(self._text).split())
        self._text = []
        if self._row is not None:
            self._row.append(text)
        elif text:
            self.lines.append(mask_text(text))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self._skip += 1
            return
        ident = dict(attrs).get("id")
        if tag in ("section", "table") and ident:
            self._flush()
            self.lines.append(f"<{tag} id={ident}>")
        if tag == "table":
            self._header = None
        if tag == "tr":
            self._flush()
            self._row, self._row_is_head = [], False
        elif tag in ("td", "th"):
            if self._row is not None and self._text:
                self._text = []
            self._row_is_head |= tag == "th" and not self._row
        elif tag in self.BLOCKS or tag == "br":
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self._skip -= 1
            return
        if tag in ("td", "th"):
            self._flush()
        elif tag == "tr" and self._row is not None:
            row, self._row = self._row, None
            if self._row_is_head and all(c or i == 0 for i, c in enumerate(row)) and self._header is None:
                self._header = row
                self.lines.append(" | ".join(row))
            else:
                self.lines.append(mask_text(" | ".join(mask_cells(self._header, row))))
        elif tag in self.BLOCKS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._text.append(data)


def html_lines(text: str) -> list[str]:
    parser = _HtmlText()
    parser.feed(text)
    parser.close()
    return [line for line in parser.lines if not any(rx.search(line) for rx in DROP_LINES)]


def diff(a_arg: str, b_arg: str, float_tol: float) -> int:
    rec_a, rec_b = Recording.load(Path(a_arg)), Recording.load(Path(b_arg))
    differ = Differ(rec_a, rec_b, float_tol=float_tol)
    differ.jobs()
    differ.files()
    for d in differ.diffs:
        print(f"{d.file}  {d.path}\n    A: {_indent(d.a)}\n    B: {_indent(d.b)}")
    hits = ", ".join(f"{reason} {n}" for reason, n in sorted(differ.ignored_hits.items()))
    print(f"ignored JSON values (rule: count): {hits or 'none'}")
    if differ.diffs:
        print(f"{len(differ.diffs)} difference(s) between {rec_a.root} and {rec_b.root}")
        return 1
    print(f"no differences between {rec_a.root} and {rec_b.root} (ignored: see IGNORE_RULES in {__file__})")
    return 0


def _indent(s: str) -> str:
    return s.replace("\n", "\n       ")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    p_rec = sub.add_parser("record", help="run every CLI job of SRC_TREE, keep the outputs in OUT_DIR")
    p_rec.add_argument("src_tree")
    p_rec.add_argument("out_dir")
    p_diff = sub.add_parser("diff", help="compare two recordings; exit 1 on any difference")
    p_diff.add_argument("out_a")
    p_diff.add_argument("out_b")
    p_diff.add_argument(
        "--float-tol", type=float, default=0.0, help="relative and absolute float tolerance (default: exact)"
    )
    ns = parser.parse_args(argv)
    if ns.command == "record":
        return record(ns.src_tree, ns.out_dir)
    return diff(ns.out_a, ns.out_b, ns.float_tol)


if __name__ == "__main__":
    sys.exit(main())
