"""``grounded view`` in a real browser: Debian's headless Chromium driven by Playwright types the
question, clicks the first hit and must show page 4 with the hit's line boxes drawn (pixel check of
the highlight colour inside the boxes, and none elsewhere), then a hit that crosses a page break,
its pages one after the other. The screenshots stay in the test's tmp folder as artifacts. Outside CI the test skips when Chromium is not installed (``scripts/test.sh``
installs it as root); in CI (``CI=true``) a missing browser fails."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.support.data import REPO
from tests.support.search_index import (
    ANSWER_PAGE,
    ENV,
    QUESTION,
    guideline_index,
    highlight_coverage,
    png_pixels,
    span_rects,
    tree_state,
)

CHROMIUM = Path("/usr/bin/chromium")
#: Playwright's own browser download does not work here: Debian's chromium, headless, nothing phoned home
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _need_browser() -> None:
    if CHROMIUM.is_file():
        return
    reason = f"{CHROMIUM} not installed (apt-get install -y chromium; scripts/test.sh does it as root)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI: the browser test must run, but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need_browser()
    return guideline_index(tmp_path_factory, "browser")


@pytest.fixture
def viewer(out: Path) -> Iterator[str]:
    """``grounded view OUT --port 0`` in a subprocess; yields its URL (printed on its first line)."""
    proc = subprocess.Popen([sys.executable, "-m", "grounded.cli", "view", str(out), "--port", "0"], cwd=REPO, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        line = proc.stdout.readline() if ready else ""
        assert "serving" in line, f"grounded view did not start: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        yield line.split(" at ", 1)[1].split()[0]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_question_first_hit_and_highlight_on_page_4(out: Path, viewer: str, tmp_path: Path) -> None:
    before = tree_state(out)
    requested: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1500}, device_scale_factor=1)
            page.on("request", lambda request: requested.append(request.url))
            page.goto(viewer)
            page.wait_for_selector("#mode option", state="attached")
            page.fill("#q", QUESTION)
            with page.expect_response(lambda r: "/api/search" in r.url, timeout=300_000) as answer:
                page.press("#q", "Enter")
            hits = answer.value.json()["hits"]
            page.wait_for_selector(".hit")
            page.locator(".hit").first.click()
            image = page.locator("img.page").first
            page.wait_for_function("() => { const i = document.querySelector('img.page'); "
                                   "return i && i.complete && i.naturalWidth > 0; }", timeout=120_000)
            assert image.get_attribute("data-page") == str(ANSWER_PAGE)
            assert image.get_attribute("data-chunk-id") == hits[0]["chunk_id"]
            assert page.locator("img.page").count() == len(hits[0]["pages"]) == 1
            page.screenshot(path=str(tmp_path / "view.png"), full_page=True)  # artifact: the whole app
            png = image.screenshot(path=str(tmp_path / f"page{ANSWER_PAGE}.png"))  # artifact: the page as shown
            assert "Capecitabine" in page.inner_text("#chunk-text")
            assert hits[0]["heading_path"][-1] in page.inner_text("#detail-heading")
            download = page.get_attribute("#download", "href")
            assert download == hits[0]["annotated_url"]
            pdf = page.request.get(viewer.rstrip("/") + download)
            assert pdf.ok and pdf.body().startswith(b"%PDF")
            # a chunk across a page break: its pages one after the other, each with its own boxes
            n, spread = next((i, h) for i, h in enumerate(hits) if len(h["pages"]) > 1)
            page.locator(".hit").nth(n).click()
            page.wait_for_function(f"() => [...document.querySelectorAll('img.page')].filter(i => "
                                   f"i.dataset.chunkId === {spread['chunk_id']!r} && i.complete && i.naturalWidth > 0)"
                                   f".length === {len(spread['pages'])}", timeout=120_000)
            images = page.locator("img.page")
            assert [images.nth(i).get_attribute("data-page") for i in range(images.count())] == [str(p) for p in spread["pages"]]
            spread_pngs = [images.nth(i).screenshot(path=str(tmp_path / f"spread-p{p}.png"))
                           for i, p in enumerate(spread["pages"])]
        finally:
            browser.close()
    for shot, number, boxes in [(png, ANSWER_PAGE, hits[0]["boxes"]),
                                *((b, p, spread["boxes"]) for b, p in zip(spread_pngs, spread["pages"]))]:
        pixels = png_pixels(shot)
        height, width = pixels.shape[:2]
        inside, outside = highlight_coverage(pixels, span_rects(boxes, number, width, height))
        assert inside > 0.6 and outside < 0.01, (number, inside, outside, tmp_path)
    assert requested and all(url.startswith(viewer) for url in requested), requested  # nothing from elsewhere
    assert tree_state(out) == before
