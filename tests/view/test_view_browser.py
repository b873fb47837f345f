"""``grounded view`` in a real browser: Debian's headless Chromium driven by Playwright types the
question; the first hit is selected at once and must show page 4 with the hit's line boxes drawn
(pixel check of the highlight colour inside the boxes, and none elsewhere), then a hit that crosses
a page break, its pages one after the other. At 900 and 1440 px the layout is checked on element
boxes (page and score apart, nothing clipped, no horizontal scroll, a readable page image that
zooms), then a PDF changed on disk must show the server's 409 message as text, and an empty or
unsearchable question must say so. The screenshots stay in the test's tmp folder as artifacts. Outside CI the test skips when Chromium is not installed (``scripts/test.sh``
installs it as root); in CI (``CI=true``) a missing browser fails."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from playwright.sync_api import Page, sync_playwright

from tests.support.search_index import (
    ANSWER_PAGE,
    QUESTION,
    derived_index,
    guideline_index,
    highlight_coverage,
    png_pixels,
    span_rects,
    table_rows,
    tree_state,
)
from tests.support.viewer import running_viewer

#: searches the index built once per run: its hits' focus reads the trees ingest left in the session's parse cache
pytestmark = pytest.mark.shared_parse_cache

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
    with running_viewer(out) as running:
        yield running.url
    assert "Traceback" not in running.stderr, running.stderr


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
            page.wait_for_selector(".hit")  # the first hit is selected without a click
            assert page.locator(".hit").first.get_attribute("aria-selected") == "true"
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
    # nothing from elsewhere (blob: URLs are the fetched pages, made in the page from this server's answers)
    assert requested and all(url.startswith((viewer, f"blob:{viewer.rstrip('/')}")) for url in requested), requested
    assert tree_state(out) == before


LONG_NAME = "2024-clinical-practice-guideline-breast-cancer-systemic-therapy-update-final-version-7-approved.pdf"
#: the element boxes the layout check reads (CSS pixels, from getBoundingClientRect)
LAYOUT_JS = """() => {
  const box = (e) => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width}; };
  const hits = [...document.querySelectorAll('.hit')].map((b) => ({
    button: box(b), selected: b.getAttribute('aria-selected'),
    name: box(b.querySelector('.name')), pages: box(b.querySelector('.pages')), score: box(b.querySelector('.score')),
    pagesClipped: b.querySelector('.pages').scrollWidth > b.querySelector('.pages').clientWidth + 1,
    scoreClipped: b.querySelector('.score').scrollWidth > b.querySelector('.score').clientWidth + 1,
    header: b.querySelector('.top').innerText}));
  const img = document.querySelector('img.page');
  return {width: window.innerWidth, scrollWidth: document.documentElement.scrollWidth, hits,
          image: img && box(img), natural: img && img.naturalWidth, figure: img && box(img.closest('figure')),
          figureScroll: img && img.closest('figure').scrollWidth, figureClient: img && img.closest('figure').clientWidth,
          results: box(document.querySelector('#results')), detail: box(document.querySelector('#detail'))};
}"""
IMAGE_LOADED = "() => { const i = document.querySelector('img.page'); return i && i.complete && i.naturalWidth > 0; }"


@pytest.fixture(scope="module")
def long_name_out(out: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """An index whose guideline rows point to a copy of the PDF with a long file name: (OUT, the copy)."""
    import pyarrow.compute as pc

    rows = table_rows(out)
    original = next(p for p in rows.column("source_path").to_pylist() if p.endswith("guideline.pdf"))
    folder = tmp_path_factory.mktemp("long-name")
    copy = folder / LONG_NAME
    copy.write_bytes(Path(original).read_bytes())
    moved = rows.set_column(rows.schema.get_field_index("source_path"), "source_path",
                            pc.replace_substring(rows.column("source_path"), original, str(copy)))
    return derived_index(folder / "index", moved), copy


def _search(page: Page, question: str) -> list[dict]:
    page.fill("#q", question)
    with page.expect_response(lambda r: "/api/search" in r.url, timeout=300_000) as answer:
        page.press("#q", "Enter")
    return list(answer.value.json().get("hits", []))


def test_layout_zoom_and_errors_as_text(long_name_out: tuple[Path, Path], tmp_path: Path) -> None:
    """At 900 and 1440 px: the best hit is shown at once, page and score never touch, nothing is
    clipped or overflows, the page image is readable (>= 560 px wide at 900 px) and zooms; then a
    PDF changed on disk shows the server's 409 message as text (no broken image), and an empty
    question and a question with no indexable words say so."""
    out, pdf = long_name_out
    with running_viewer(out) as viewer, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000}, device_scale_factor=1)
            page.goto(viewer.url)
            page.wait_for_selector("#mode option", state="attached")
            for width, min_image in ((900, 560), (1440, 900)):
                page.set_viewport_size({"width": width, "height": 1000})
                hits = _search(page, QUESTION)
                page.wait_for_function(IMAGE_LOADED, timeout=120_000)
                layout = page.evaluate(LAYOUT_JS)
                page.screenshot(path=str(tmp_path / f"view-{width}.png"))
                assert layout["scrollWidth"] <= width, layout  # no horizontal scrolling of the page
                assert layout["hits"][0]["selected"] == "true" and len(layout["hits"]) == len(hits)
                for hit in layout["hits"]:
                    pages, score, name, button = hit["pages"], hit["score"], hit["name"], hit["button"]
                    assert pages["right"] + 6 <= score["left"], hit  # "p. 7" and "6.8100" never touch
                    assert name["right"] <= pages["left"], hit
                    assert button["left"] <= name["left"] and score["right"] <= button["right"] - 4, hit
                    assert not hit["pagesClipped"] and not hit["scoreClipped"], hit
                assert any(LONG_NAME[:20] in h["header"] for h in layout["hits"])
                image = layout["image"]
                assert image["width"] >= min_image and image["right"] <= width, (width, image)
                assert image["left"] >= layout["results"]["right"], layout  # beside the hits, not below
                # the zoom label says the page's real size (100 % = the PDF's own: 72 pt = 96 CSS px), so
                # the same label means the same size at 900 and 1440 px
                with pymupdf.open(pdf) as doc:
                    true_width = doc[0].rect.width * 96 / 72
                real = round(100 * image["width"] / true_width)
                label = page.inner_text("#zoom-level")
                assert label.startswith("fit · ") and abs(int(label.split("· ")[1].rstrip(" %")) - real) <= 1, (label, real)
                # zoom: wider than the pane (scrolls inside it), re-rendered sharper
                natural = layout["natural"]
                page.click("#zoom-in")
                page.wait_for_function(f"() => {{ const i = document.querySelector('img.page'); "
                                       f"return i && i.complete && i.naturalWidth > {natural}; }}", timeout=120_000)
                zoomed = page.evaluate(LAYOUT_JS)
                assert zoomed["image"]["width"] >= 1.4 * image["width"] and zoomed["figureScroll"] > zoomed["figureClient"]
                assert zoomed["scrollWidth"] <= width, zoomed  # the page scrolls inside its frame only
                page.screenshot(path=str(tmp_path / f"view-{width}-zoomed.png"))
                zoomed_label = page.inner_text("#zoom-level")
                assert abs(int(zoomed_label.rstrip(" %")) - round(100 * zoomed["image"]["width"] / true_width)) <= 1, zoomed_label
                page.click("#zoom-fit")
                page.wait_for_function(f"() => {{ const i = document.querySelector('img.page'); "
                                       f"return i && i.complete && i.naturalWidth === {natural}; }}", timeout=120_000)
            # the PDF changes on disk: the page shows the server's message, never a broken image
            page.set_viewport_size({"width": 900, "height": 1000})
            pdf.write_bytes(pdf.read_bytes() + b"\n% a new version\n")
            _search(page, QUESTION)
            page.wait_for_selector("#pages .error", timeout=120_000)
            text = page.inner_text("#pages")
            assert "changed since it was indexed" in text and "409" in text, text
            assert page.locator("img.page").count() == 0
            page.click("#download")
            page.wait_for_selector("#detail-error:not([hidden])", timeout=60_000)
            assert "changed since it was indexed" in page.inner_text("#detail-error")
            page.click("#source")
            page.wait_for_function("() => document.querySelector('#detail-error').textContent.includes('Original') "
                                   "|| document.querySelector('#detail-error').textContent.includes('original')", timeout=60_000)
            assert "changed since it was indexed" in page.inner_text("#detail-error")
            page.screenshot(path=str(tmp_path / "view-900-changed-pdf.png"))
            # questions that cannot be searched say so in the page (a CJK question is answered from the
            # vector list in the default hybrid mode): never a bare "0 hit(s)"
            for question in ("   ", "乳腺癌的治疗"):
                _search(page, question)
                page.wait_for_function("() => !document.querySelector('#status').textContent.startsWith('searching')")
                status = page.inner_text("#status").strip()
                assert status and not re.search(r"(?<!\d)0 hits?\b", status), (question, status)
                if not re.match(r"[1-9]\d* hits?\b", status):  # no hits: the reason stands once, where they would be
                    reason = page.inner_text("#hits")
                    assert reason and reason not in status and "--mode" not in reason, (status, reason)
            page.screenshot(path=str(tmp_path / "view-900-cjk.png"))
        finally:
            browser.close()
    assert "Traceback" not in viewer.stderr, viewer.stderr


def _focused(pixels: np.ndarray) -> np.ndarray:
    """Pixels tinted by the focus (orange over the chunk's lighter yellow): red high, green and blue held down."""
    r, g, b = (pixels[..., i].astype(int) for i in range(3))
    return (r > 200) & (g < 226) & (b < 150) & (r - g > 30)


def test_the_focus_is_drawn_inside_the_chunk_and_scrolled_into_view(out: Path, viewer: str, tmp_path: Path) -> None:
    """At 1440x1000 the best hit's focus (the sentences that answer) is drawn in orange inside the
    chunk's boxes, marked in the chunk text, listed under the hit, and the page is scrolled so its
    first line is in view; keyboard focus has left the question box (the arrow keys move between hits)."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000}, device_scale_factor=1)
            page.goto(viewer)
            page.wait_for_selector("#mode option", state="attached")
            hits = _search(page, QUESTION)
            best = hits[0]
            assert best["focus"] and best["focus_boxes"], best
            page.wait_for_function(IMAGE_LOADED, timeout=120_000)
            page.wait_for_timeout(300)  # the load handler's scroll
            view = page.evaluate("""(box) => { const i = document.querySelector('img.page'); const r = i.getBoundingClientRect();
                const y = r.top + box.top * i.clientHeight; return {y, height: window.innerHeight, active: document.activeElement.id}; }""",
                                 best["focus_boxes"][0])
            assert 0 <= view["y"] <= view["height"] * 0.8, view  # the focus's first line is in the window
            assert view["active"] != "q"
            marked = page.inner_text("#chunk-text mark.focus")
            assert marked and " ".join(marked.split()) in " ".join(" ".join(best["focus_text"]).split())
            assert page.locator(".hit .focus").first.inner_text().startswith("»")
            shot = page.locator("img.page").first.screenshot(path=str(tmp_path / "focus.png"))
            page.keyboard.press("ArrowDown")
            assert page.locator(".hit").nth(1).get_attribute("aria-selected") == "true"
        finally:
            browser.close()
    number = best["focus_boxes"][0]["page"]
    for f in best["focus_boxes"]:  # every focus line lies inside the chunk's boxes
        for s in f["spans"] or [f]:
            assert any(c["page"] == f["page"] and c["left"] - 0.004 <= s["left"] and s["right"] <= c["right"] + 0.004
                       and c["top"] - 0.004 <= s["top"] and s["bottom"] <= c["bottom"] + 0.004 for c in best["boxes"]), s
    pixels = png_pixels(shot)
    height, width = pixels.shape[:2]
    rects = span_rects(best["focus_boxes"], number, width, height)
    tinted = _focused(pixels)
    inside = np.zeros(tinted.shape, dtype=bool)
    near = np.zeros(tinted.shape, dtype=bool)
    for x0, y0, x1, y1 in rects:
        inside[y0:y1, x0:x1] = True
        near[max(0, y0 - 6): y1 + 6, max(0, x0 - 6): x1 + 6] = True
    assert tinted[inside].mean() > 0.5 and tinted[~near].mean() < 0.002, (tinted[inside].mean(), tinted[~near].mean(), tmp_path)
