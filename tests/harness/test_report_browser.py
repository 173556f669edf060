"""The HTML report in a real headless browser (issue 6): it renders every plot with no console error.

Needs a Chromium binary and its WebDriver (Debian: ``apt-get install chromium chromium-driver``; .ci/run
installs them) and the ``selenium`` package (the dev extra); skipped with the reason otherwise. The
driver and browser are the system ones, named explicitly, so Selenium never tries to download either.
A planted page with a script error checks that the console check itself can fail.

A screenshot of a report, by hand: ``chromium --headless --no-sandbox --screenshot=shot.png
--window-size=1300,6000 file://$PWD/results/<run_id>/report.html``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.execution.config import RunConfig
from harness.runs.catalog import write_report
from harness.runs.session import execute_run

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DRIVERS = ("chromedriver", "chromium-driver")


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
        "--window-size=1300,1000",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    session = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    try:
        yield session
    finally:
        session.quit()


def _console_errors(session: Any) -> list[dict[str, Any]]:
    return [entry for entry in session.get_log("browser") if entry.get("level") == "SEVERE"]


def test_console_check_catches_a_script_error(driver: Any, tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><body><script>throw new Error("planted");</script></body></html>')
    driver.get_log("browser")  # drain
    driver.get(page.as_uri())
    errors = _console_errors(driver)
    assert errors and "planted" in errors[0]["message"]


def test_report_renders_its_plots_without_console_errors(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    config = RunConfig.model_validate(
        {
            "data": {"num_streams": 3, "duration_s": 5.0},
            "engine": {"warmup_frames": 10},
            "protocol": {"bootstrap_resamples": 50},
            "output_dir": tmp_path,
            "run_id": "browser",
        }
    )
    execute_run(config)
    report = write_report(["browser"], tmp_path / "report.html", results_dir=tmp_path)
    driver.get_log("browser")  # drain
    driver.get(report.as_uri())
    assert driver.execute_script("return document.readyState") == "complete"
    assert _console_errors(driver) == []
    plots = driver.find_elements(By.CSS_SELECTOR, "svg.plot")
    assert len(plots) == 6  # latency, timeline, F1, breakdown, reliability, DET/ROC (no robustness file)
    for plot in plots:
        size = plot.size
        assert size["width"] > 300 and size["height"] > 150, size
        # drawn: the SVG has painted shapes with a real bounding box, not an empty frame
        box = driver.execute_script("const b = arguments[0].getBBox(); return [b.width, b.height];", plot)
        assert box[0] > 100 and box[1] > 100, box
    images = driver.execute_script(
        "return Array.from(document.images).map(i => [i.complete, i.naturalWidth]);"
    )
    assert all(done and width > 0 for done, width in images)
    shot = tmp_path / "report.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    assert _console_errors(driver) == []
