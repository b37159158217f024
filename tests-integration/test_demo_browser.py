"""`make demo` as a person sees it: headless Chromium reads the bars and watches a live update."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from chromium_flags import CHROMIUM, CHROMIUM_ARGS

HERE = Path(__file__).resolve().parent
SCREENSHOT = HERE / "demo_product" / "screenshot.png"


def _start_demo(
    tmp_path: Path, *extra: str, env: dict[str, str] | None = None
) -> Iterator[dict[str, str]]:
    ready = tmp_path / "ready.json"
    env = {**os.environ, "PYTHONPATH": str(HERE), **(env or {})}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "demo_product",
            "--port",
            "0",
            "--interval",
            "1",
            "--ready-file",
            str(ready),
            *extra,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(300):
            if ready.exists() and ready.stat().st_size:
                break
            if proc.poll() is not None:
                raise AssertionError(proc.stderr.read() if proc.stderr else "demo exited")
            time.sleep(0.1)
        info: dict[str, str] = json.loads(ready.read_text())
        yield info
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "demo: stopping" in out
    assert not Path(info["workdir"]).exists()  # Ctrl-C leaves nothing behind


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[dict[str, str]]:
    yield from _start_demo(tmp_path)


@pytest.fixture
def demo_without_gh_login(tmp_path: Path) -> Iterator[dict[str, str]]:
    """`make demo ARGS="--repo ..."` on a machine where gh has never logged in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GH_", "GITHUB_"))}
    env["GH_CONFIG_DIR"] = str(tmp_path / "gh-config")
    yield from _start_demo(tmp_path, "--repo", "octo/widgets", env=env)


@pytest.mark.slow
def test_page_shows_bars_and_updates_live(demo: dict[str, str], tmp_path: Path) -> None:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.goto(demo["url"])
            page.wait_for_selector("#status[data-state=live]", timeout=20_000)
            # Every profile shows its two windows as bars once the poller has written readings.
            page.wait_for_function(
                "document.querySelectorAll('.card .window[data-window=five_hour]').length === 3",
                timeout=30_000,
            )
            labels = page.eval_on_selector_all(".card", "cs => cs.map(c => c.dataset.label)")
            assert labels == ["default", "personal", "work"]
            widths = page.eval_on_selector_all(
                ".window .bar > span", "spans => spans.map(s => s.style.width)"
            )
            assert all(w.endswith("%") for w in widths)
            rows = page.eval_on_selector_all("#prs tbody tr", "rs => rs.map(r => r.dataset.number)")
            assert rows == ["1", "2", "3", "4"]
            assert page.inner_text("#prs tbody tr[data-number='1'] td.ready-yes") == "ready"
            assert "check-failed" in page.inner_text("#prs tbody tr[data-number='2']")
            # Each window's history is drawn as a small chart that grows as the poller writes,
            # with the forecast of when it fills beside it.
            page.wait_for_function(
                "[...document.querySelectorAll('.card svg.history[data-window=five_hour]')]"
                ".filter(s => Number(s.dataset.points) >= 2"
                " && s.querySelector('polyline')).length === 3",
                timeout=30_000,
            )
            forecasts = page.eval_on_selector_all(
                ".trend[data-window=five_hour] .forecast", "fs => fs.map(f => f.textContent)"
            )
            assert len(forecasts) == 3
            assert all(
                f == "no forecast yet" or f == "not full before it resets" or f.startswith("full ~")
                for f in forecasts
            ), forecasts
            # A live update: the forge moves and the poller writes; the page re-renders by itself.
            renders = int(page.evaluate("document.body.dataset.renders || '0'"))
            page.wait_for_function(
                f"Number(document.body.dataset.renders || 0) > {renders + 1}", timeout=30_000
            )
            page.screenshot(path=str(tmp_path / "demo.png"), full_page=True)
            if os.environ.get("UPDATE_SCREENSHOT"):
                SCREENSHOT.write_bytes((tmp_path / "demo.png").read_bytes())
        finally:
            browser.close()


@pytest.mark.slow
def test_an_empty_section_says_why(demo_without_gh_login: dict[str, str]) -> None:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(demo_without_gh_login["url"])
            page.wait_for_selector("#status[data-state=live]", timeout=20_000)
            page.wait_for_selector("#prs-note:not([hidden])", timeout=30_000)
            assert page.inner_text("#prs-note") == (
                "No pull requests shown: gh could not read the forge:"
                " is gh installed and logged in? (`gh auth status`)"
            )
            assert page.eval_on_selector_all("#prs tbody tr", "rs => rs.length") == 0
            # The accounts section is untouched by the forge's failure.
            page.wait_for_function(
                "document.querySelectorAll('.card').length === 3", timeout=30_000
            )
            assert page.is_hidden("#accounts-note")
        finally:
            browser.close()
