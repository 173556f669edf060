"""The HTML reports in a real headless browser (issues 6 and 17): the single-run, comparison and sweep
reports, each at a 1300 px wide window, with no console error, no horizontal overflow
(``document.documentElement.scrollWidth <= window.innerWidth``, with every ``<details>`` closed and
again opened), every plot drawn at a legible size, and a full-page screenshot of real size.

A comparison of four runs (a long run name, one INVALID) is measured table by table too: no table wider than
the page (issue 27).

Needs a Chromium binary and its WebDriver (Debian: ``apt-get install chromium chromium-driver``; .ci/run
installs them) and the ``selenium`` package (the dev extra); skipped with the reason otherwise. The
driver and browser are the system ones, named explicitly, so Selenium never tries to download either.
Planted pages check that the checks themselves can fail: a script error, a table wider than the window,
an empty plot.

A screenshot of a report, by hand: ``chromium --headless --no-sandbox --screenshot=shot.png
--window-size=1300,6000 file://$PWD/results/<run_id>/report.html``.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streambench.harness.execution.config import RunConfig
from streambench.harness.results.files import RESULT_FILE
from streambench.harness.runs.catalog import write_report
from streambench.harness.runs.session import execute_run
from streambench.harness.sweep.driver import run_sweep
from streambench.harness.sweep.executors import LocalExecutor
from streambench.harness.sweep.report import build_sweep_report
from streambench.harness.sweep.report_html import write_sweep_html
from streambench.harness.sweep.spec import SweepFile

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DRIVERS = ("chromedriver", "chromium-driver")
WIDTH = 1300
# in process: the pages are what is tested here, not the worker (the sealed default's pages: test_report.py)
SMALL = {"data": {"num_streams": 3, "duration_s": 4.0}, "engine": {"warmup_frames": 5}, "isolate": False}
PLOTS = "svg.plot, img, canvas"
"""How a report embeds its plots: inline ``<svg class="plot">`` (any ``img`` or ``canvas`` is checked too)."""


def _which(names: tuple[str, ...], extra: tuple[str, ...] = ()) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return next((p for p in extra if os.access(p, os.X_OK)), None)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    browser = _which(BROWSERS)
    if browser is None:
        pytest.skip(
            f"no Chromium browser installed (looked for {', '.join(BROWSERS)}): apt-get install chromium"
        )
    chromedriver = _which(DRIVERS, ("/usr/lib/chromium/chromedriver",))
    if chromedriver is None:
        pytest.skip("no chromedriver installed (Debian: apt-get install chromium-driver)")
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')"
    )
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--window-size={WIDTH},1000",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    session = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    try:
        yield session
    finally:
        session.quit()


LONG = "silero-vad-onnx-16k-chunk512-threshold0.5-2026-01-01T12-00-00"
"""A run name as long as real ones get: the comparison's tables must still fit the page."""


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A single-run report, a comparison of two runs, one of four (issue 27: a long run name, one run
    whose measurement is INVALID), and the page of a sweep of two adapters × two repeats: small runs (3
    streams of 4 s)."""
    root = tmp_path_factory.mktemp("browser")
    for run_id, adapter in (("a", "reference"), ("b", "reference-lookahead"), ("c", "null")):
        config = {**SMALL, "adapter": adapter, "protocol": {"bootstrap_resamples": 50}}
        execute_run(RunConfig.model_validate({**config, "output_dir": root, "run_id": run_id}))
    shutil.copytree(root / "a", root / LONG)
    raw = json.loads((root / LONG / RESULT_FILE).read_text())
    raw["run_id"] = LONG
    reason = (
        "2298 involuntary context switches in 375 frames: up to 613% of frames include another process's time"
    )
    raw["measurement_quality"].update(verdict="INVALID", reasons=[reason])
    (root / LONG / RESULT_FILE).write_text(json.dumps(raw))
    sweep = SweepFile.model_validate(
        {
            "sweep": {"name": "browser", "output_dir": str(root / "sweep"), "repeats": 2, "baseline": "ref"},
            "run": SMALL,
            "adapters": [
                {"adapter": "reference", "label": "ref"},
                {"adapter": "null", "label": "null model"},
            ],
            "protocols": {"online": {}},
        }
    )
    run_sweep(sweep, LocalExecutor(retries=0))
    (page,) = write_sweep_html(build_sweep_report(sweep, root / "sweep"), root / "sweep.html", root / "sweep")
    return {
        "single": write_report(["a"], root / "single.html", results_dir=root),
        "comparison": write_report(["a", "b"], root / "comparison.html", results_dir=root),
        "four": write_report(["a", "b", "c", LONG], root / "four.html", results_dir=root, budget_ms=100.0),
        "sweep": page,
    }


def _console_errors(session: Any) -> list[dict[str, Any]]:
    return [entry for entry in session.get_log("browser") if entry.get("level") == "SEVERE"]


def _overflow(session: Any) -> str | None:
    width, inner = session.execute_script("return [document.documentElement.scrollWidth, window.innerWidth];")
    return None if width <= inner else f"scrollWidth {width} > innerWidth {inner}"


_PLOT_SIZES = f"""
return Array.from(document.querySelectorAll('{PLOTS}')).map(p => {{
  const r = p.getBoundingClientRect();
  const box = p.getBBox ? p.getBBox()
    : {{width: p.naturalWidth || p.width, height: p.naturalHeight || p.height}};
  const sizes = [r.width, r.height, box.width, box.height].map(Math.round);
  return [p.tagName.toLowerCase(), ...sizes];
}});"""


def _png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


def page_problems(session: Any, page: Path, shot: Path) -> tuple[list[str], int]:
    """Everything wrong with ``page`` at a 1300 px window: console errors, sideways overflow (details
    closed, then all opened), plots not drawn at a legible size, a screenshot too small. Returns the
    problems and the number of plots checked."""
    session.set_window_size(WIDTH, 1000)
    session.get_log("browser")  # drain
    session.get(page.as_uri())
    problems = [f"console: {e['message']}" for e in _console_errors(session)]
    if session.execute_script("return document.readyState") != "complete":
        problems.append("the page did not finish loading")
    inner = session.execute_script("return window.innerWidth")
    if abs(inner - WIDTH) > 20:
        problems.append(f"the window is {inner} px wide, not {WIDTH}")
    problems += [f"closed: {o}" for o in [_overflow(session)] if o]
    session.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    problems += [f"opened: {o}" for o in [_overflow(session)] if o]
    plots = session.execute_script(_PLOT_SIZES)
    for tag, width, height, drawn_w, drawn_h in plots:
        if width < 300 or height < 150 or drawn_w < 100 or drawn_h < 100:
            problems.append(f"{tag} shown {width}×{height}, drawn {drawn_w}×{drawn_h}")
    height = min(session.execute_script("return document.documentElement.scrollHeight"), 8000)
    session.set_window_size(WIDTH, height)
    session.save_screenshot(str(shot))
    size = _png_size(shot)
    if shot.stat().st_size < 20_000 or size[0] < WIDTH - 20 or size[1] < min(height, 1000) - 20:
        problems.append(f"screenshot {size[0]}×{size[1]}, {shot.stat().st_size} bytes")
    problems += [f"console: {e['message']}" for e in _console_errors(session)]
    return problems, len(plots)


@pytest.mark.processes
def test_console_check_catches_a_script_error(driver: Any, tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><body><script>throw new Error("planted");</script></body></html>')
    problems, _ = page_problems(driver, page, tmp_path / "broken.png")
    assert any("planted" in p for p in problems)


@pytest.mark.processes
def test_the_checks_catch_overflow_and_an_undrawn_plot(driver: Any, tmp_path: Path) -> None:
    """The checks can fail: a table wider than the window inside a closed <details>, and a plot that
    draws nothing."""
    page = tmp_path / "planted.html"
    page.write_text(
        '<!DOCTYPE html><html><body><p>planted</p><details><summary>more</summary><table><tr><td style="'
        'min-width:2000px">wide</td></tr></table></details><svg class="plot" width="600" height="300">'
        "</svg></body></html>"
    )
    problems, plots = page_problems(driver, page, tmp_path / "planted.png")
    assert plots == 1
    assert any(p.startswith("opened: scrollWidth") for p in problems), problems
    assert not any(p.startswith("closed:") for p in problems), problems
    assert any(p.startswith("svg shown 600×300, drawn 0×0") for p in problems), problems


@pytest.mark.processes
@pytest.mark.parametrize(
    ("kind", "at_least"),
    [("single", 6), ("comparison", 2 + 2 * 6), ("four", 2 + 3 * 6 + 5), ("sweep", 2)],  # null: no stages
)
def test_report_renders_legibly_at_1300_px(
    driver: Any, reports: dict[str, Path], tmp_path: Path, kind: str, at_least: int
) -> None:
    """No console error, no sideways overflow, every plot drawn (single run: latency, timeline, F1,
    breakdown, reliability, DET/ROC; comparison: latency distributions and Pareto, then each run's six;
    sweep: Pareto and latency distributions), a real screenshot."""
    problems, plots = page_problems(driver, reports[kind], tmp_path / f"{kind}.png")
    assert problems == []
    assert plots >= at_least


_TABLES = """
const page = document.documentElement.clientWidth;
return Array.from(document.querySelectorAll('table')).map(t => {
  const r = t.getBoundingClientRect();
  return [Math.round(r.left), Math.round(r.right), t.scrollWidth, t.clientWidth, page,
          (t.querySelector('th, td') || {}).textContent || ''];
}).filter(([left, right, scroll, client, page]) => left < 0 || right > page || scroll > client);"""


@pytest.mark.processes
@pytest.mark.parametrize("kind", ["comparison", "four"])
def test_no_comparison_table_is_wider_than_the_page(driver: Any, reports: dict[str, Path], kind: str) -> None:
    """Issue 27: with three runs the headline table ran past the edge at 1400 px. At 1300 px, every
    <details> open, the page's scroll width is the window's and no table reaches past the page."""
    driver.set_window_size(WIDTH, 1000)
    driver.get(reports[kind].as_uri())
    driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    scroll, inner = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth];")
    assert scroll <= inner
    assert driver.execute_script(_TABLES) == []
    assert driver.execute_script("return document.querySelectorAll('table.headline').length") == (
        1 if kind == "comparison" else 2  # run #1 and two more runs per table
    )


def test_the_table_check_catches_a_table_wider_than_the_page(driver: Any, tmp_path: Path) -> None:
    page = tmp_path / "wide.html"
    page.write_text(
        '<!DOCTYPE html><html><body style="max-width:1150px"><table><tr><td style="white-space:nowrap">'
        + "wide " * 300
        + "</td></tr></table></body></html>"
    )
    driver.set_window_size(WIDTH, 1000)
    driver.get(page.as_uri())
    (found,) = driver.execute_script(_TABLES)
    assert found[1] > found[4] and found[5].startswith("wide")
